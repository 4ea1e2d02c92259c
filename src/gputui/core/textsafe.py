"""Make strings from outside safe to show on a terminal.

Process names and command lines, user and container names, NVML strings and
file contents (model names, keys echoed in errors) are written by someone else.
A command line holding ``ESC ] 0 ; ... BEL`` would retitle the terminal of
whoever watches, ``ESC [ 2 J`` would blank it. Every such string passes through
:func:`visible` once, where it enters gputui (the boundary), so views never
have to think about it; the TUI additionally escapes Rich markup with
:func:`markup_safe` where a string is embedded in markup.

Control characters are not dropped but shown, so a user can see that a name
holds one: C0 and DEL as caret notation (``^[`` for ESC), C1 and the Unicode
line/paragraph separators and bidirectional overrides (which can reorder what
a reader sees) as ``\\xNN`` / ``\\uNNNN``.
"""

from __future__ import annotations

import re

# C0 (0x00-0x1f), DEL, C1 (0x80-0x9f), line/paragraph separators, bidi embeddings,
# overrides and isolates, zero-width no-break space / BOM. Every one of them is a
# character `str.isprintable()` refuses (categories Cc, Cf, Zl, Zp; a test checks), so a
# printable string, which nearly every string is, needs no regular expression at all.
# The patterns are handed to `re` as strings: compiled on first use by re's own cache
# (~0.6 ms and ~0.3 ms at import otherwise, on the `gputui snapshot` path, which never
# needs the markup one).
_UNSAFE_CLASS = "[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ufeff]"
# A `[` that starts something tag-like, including `[/`, `[@`, `[#` (Rich's pattern).
_MARKUP_TAG_PATTERN = r"(?i)(\\*)(\[[a-z#/@][^[]*?])"


def _show(match: re.Match[str]) -> str:
    ch = match.group(0)
    code = ord(ch)
    if code < 0x20:
        return "^" + chr(code + 0x40)
    if code == 0x7F:
        return "^?"
    if code <= 0xFF:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}"


def visible(text: str) -> str:
    """`text` with every control character shown visibly instead of acted upon."""
    if text.isprintable():
        return text
    if not re.search(_UNSAFE_CLASS, text):
        return text  # non-printable but harmless, e.g. a no-break space
    return re.sub(_UNSAFE_CLASS, _show, text)


def is_visible(text: str) -> bool:
    """True when `text` holds nothing a terminal would act upon."""
    return text.isprintable() or re.search(_UNSAFE_CLASS, text) is None


def markup_safe(text: str) -> str:
    """`visible(text)` with Rich markup escaped, for embedding data in a markup string.

    Kept free of a Rich import so the data layers can call it; the rule is
    Rich's own `markup.escape` (double the backslashes before a tag-like
    bracket and escape the bracket; a trailing lone backslash is doubled).
    """
    safe = re.sub(_MARKUP_TAG_PATTERN, _escape_tag, visible(text))
    if safe.endswith("\\") and not safe.endswith("\\\\"):
        safe += "\\"
    return safe


def _escape_tag(match: re.Match[str]) -> str:
    backslashes, tag = match.groups()
    return f"{backslashes}{backslashes}\\{tag}"
