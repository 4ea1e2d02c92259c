"""The one sanitiser every outside string passes through before a terminal sees it."""

from __future__ import annotations

import pytest
from rich.markup import escape, render

from gputui.core.textsafe import is_visible, markup_safe, visible

CONTROLS = [chr(c) for c in (*range(0x00, 0x20), 0x7F, *range(0x80, 0xA0))]
BIDI = ["\u2028", "\u2029", *map(chr, range(0x202A, 0x202F)), *map(chr, range(0x2066, 0x206A))]


@pytest.mark.parametrize("ch", CONTROLS + BIDI + ["\ufeff"])
def test_every_control_character_is_shown_not_passed(ch: str) -> None:
    out = visible(f"a{ch}b")
    assert ch not in out
    assert is_visible(out)
    assert out.startswith("a") and out.endswith("b") and len(out) > 3


def test_escape_sequences_become_caret_notation() -> None:
    assert visible("x\x1b]0;pwned\x07y") == "x^[]0;pwned^Gy"
    assert visible("\x1b[2J") == "^[[2J"
    assert visible("\x9b") == "\\x9b"
    assert visible("\u202e") == "\\u202e"


def test_plain_text_and_unicode_pass_unchanged() -> None:
    for text in ("python train.py --lr 3e-4", "ユーザー", "naïve émoji 🚀", ""):
        assert visible(text) == text


@pytest.mark.parametrize(
    "text", ["[red]x", "[/]", "a\\", "\\[bold]y[/bold]", "[link=http://x]y", "[@click=quit]z"]
)
def test_markup_safe_matches_rich_and_renders_literally(text: str) -> None:
    assert markup_safe(text) == escape(text)
    assert render(markup_safe(text)).plain == render(escape(text)).plain
    assert not render(markup_safe(text)).spans


def test_markup_safe_also_neutralises_controls() -> None:
    out = markup_safe("[red]\x1b[2J")
    assert "\x1b" not in out
    assert render(out).plain == "[red]^[[2J"


def test_every_unsafe_character_is_one_isprintable_refuses() -> None:
    """visible() returns a printable string untouched without its regular expression: that
    is only right if no character the expression matches is printable. All of Unicode."""
    import re

    from gputui.core.textsafe import _UNSAFE_CLASS

    unsafe = re.compile(_UNSAFE_CLASS)
    matched = [c for c in map(chr, range(0x110000)) if unsafe.match(c)]
    assert len(matched) > 60  # C0, DEL, C1, separators, bidi controls, BOM
    assert not [c for c in matched if c.isprintable()]


def test_non_printable_but_harmless_text_is_left_as_it_is() -> None:
    for text in ("a\u00a0b", "wide\u3000space", "soft\u00adhyphen"):
        assert not text.isprintable()
        assert visible(text) == text and is_visible(text)
