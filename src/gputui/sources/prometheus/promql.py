"""Label values written into PromQL: quoted as the PromQL lexer reads strings, and
escaped as RE2 reads regular expressions.

A label value is anything its exporter wrote: a `Hostname` may hold a newline,
a quote, a backslash or `.`. Python's `re.escape` writes a newline as a
backslash and a raw newline, which a PromQL string may not hold (Prometheus
answers 400 and that host's GPUs were never read); it also escapes characters
RE2 need not see escaped. Here: RE2 escapes only its metacharacters, and the
string literal escapes backslash, quote and every character that is not
printable (as \\n, \\t or \\u/\\U escapes, which PromQL's Go-style strings take).
"""

from __future__ import annotations

from collections.abc import Iterable

_RE2_META = frozenset("\\.+*?()|[]{}^$")
_SHORT = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t", "\r": "\\r"}


def regex_escape(value: str) -> str:
    """`value` as an RE2 pattern that matches it literally."""
    return "".join("\\" + c if c in _RE2_META else c for c in value)


def regex_alternation(values: Iterable[str]) -> str:
    """An RE2 alternation matching exactly these values (PromQL anchors `=~` matches)."""
    return "|".join(regex_escape(v) for v in values)


def _char(c: str) -> str:
    if c in _SHORT:
        return _SHORT[c]
    if c.isprintable():
        return c
    code = ord(c)
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def quoted(value: str) -> str:
    """A double-quoted PromQL string literal whose value is `value`."""
    return '"' + "".join(map(_char, value)) + '"'
