"""gputui.core.tomlsafe: every way tomllib can fail on a user's file is one UserError line."""

from __future__ import annotations

from pathlib import Path

import pytest

from gputui.core.errors import UserError
from gputui.core.tomlsafe import TomlError, parse_toml, read_toml


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a = 1\nb = \n", "f.toml:2: invalid TOML: Invalid value (column 5)"),
        ("x = " + "[" * 500 + "]" * 500, "f.toml:1: invalid TOML: arrays or inline tables are nested too deeply"),
        ("\n\nx = " + "{a=" * 400 + "1" + "}" * 400, "f.toml:3: invalid TOML: arrays or inline tables are nested too deeply"),
        ("y = '[[[['\nx = " + "[" * 500 + "]" * 500, "f.toml:2: invalid TOML: arrays or inline tables"),
        ("x = 1\ny = " + "9" * 5000, "f.toml:2: invalid TOML: a number is too long"),
        ("a." + ".".join(["b"] * 100) + " = 1", "f.toml: invalid TOML: a.b.b.b…: nested more than 64 levels deep"),
        ("\nx = [" + "[" * 70 + "]" * 70 + "]", "f.toml:2: invalid TOML: x[0][0][0]…: nested more than 64"),
    ],
)
def test_parse_failures_are_one_line(text: str, expected: str) -> None:
    with pytest.raises(TomlError) as exc:
        parse_toml(text, "f.toml")
    message = str(exc.value)
    assert "\n" not in message and message.startswith(expected), message
    assert exc.value.exit_code == 2


def test_moderate_nesting_is_fine() -> None:
    assert parse_toml("x = [[[1]]]\n[a.b.c]\nd = {e = {f = 1}}", "f.toml") == {
        "x": [[[1]]],
        "a": {"b": {"c": {"d": {"e": {"f": 1}}}}},
    }


def test_the_label_is_made_visible() -> None:
    with pytest.raises(TomlError) as exc:
        parse_toml("a = ", "evil\x1b]0;x\x07.toml")
    assert "\x1b" not in str(exc.value) and str(exc.value).startswith(
        "evil^[]0;x^G.toml:1: invalid TOML: Invalid value (at the end of the file)"
    )


def test_read_failures(tmp_path: Path) -> None:
    cases = {
        tmp_path / "missing.toml": "missing.toml: models file not found",
        tmp_path: "is a directory, not a models file",
    }
    big = tmp_path / "big.toml"
    big.write_bytes(b"# " + b"x" * 2000 + b"\n")
    cases[big] = "big.toml: models file is larger than 0 MiB"
    binary = tmp_path / "bin.toml"
    binary.write_bytes(b"a = 1\n\xff\n")
    cases[binary] = "bin.toml:2: not a UTF-8 text file"
    for path, expected in cases.items():
        with pytest.raises(UserError) as exc:
            read_toml(path, what="models file", max_bytes=1000)
        assert str(exc.value).endswith(expected), str(exc.value)


def test_read_returns_text_and_data(tmp_path: Path) -> None:
    path = tmp_path / "ok.toml"
    path.write_text("a = 1\n", encoding="utf-8")
    assert read_toml(path) == ("a = 1\n", {"a": 1})
