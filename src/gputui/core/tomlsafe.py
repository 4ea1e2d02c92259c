"""Read a TOML file the user wrote without ever ending in a traceback.

`tomllib` raises more than `TOMLDecodeError` on hostile input: arrays or
inline tables nested a few hundred deep exhaust the recursion limit
(`RecursionError`), an integer of more than 4300 digits trips Python's
int-conversion limit (`ValueError`), and dotted keys (`a.b.c... = 1`) parse
fine into dictionaries thousands of levels deep that then break any code that
walks or prints them. Every loader (scenarios, models files, the catalog)
goes through here so each of those is one `UserError` line naming the file
and, where it can be known, the line: ``path:LINE: invalid TOML: reason``.

Only the standard library (tomli on 3.10): this is on the start-up path of
`gputui snapshot --demo`.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gputui.core.errors import UserError
from gputui.core.inputfile import open_regular
from gputui.core.textsafe import visible

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib  # type: ignore[import-not-found, unused-ignore]

#: Larger files are refused before parsing: no hand-written config is this big.
DEFAULT_MAX_BYTES = 16 << 20
#: Deeper tables or arrays are refused: real files nest a handful of levels.
DEFAULT_MAX_DEPTH = 64

_POSITION = re.compile(r"\s*\(at line (\d+), column (\d+)\)\s*$")
_AT_END = re.compile(r"\s*\(at end of document\)\s*$")
_LONG_DIGITS = re.compile(r"[0-9_]{4000,}")


class TomlError(UserError):
    """A TOML file that cannot be used, with where it went wrong when known."""

    def __init__(self, where: str, reason: str, line: int | None = None) -> None:
        at = f":{line}" if line is not None else ""
        super().__init__(f"{where}{at}: invalid TOML: {reason}")
        self.where = where
        self.line = line
        self.reason = reason


def parse_toml(text: str, where: str, *, max_depth: int = DEFAULT_MAX_DEPTH) -> dict[str, Any]:
    """`tomllib.loads(text)`, with every failure a one-line `TomlError` naming `where`.

    `where` is how the file is shown to the user (it is passed through
    `visible()`, as a path can hold control characters).
    """
    shown = visible(where)
    try:
        data: dict[str, Any] = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        message = str(exc)
        pos = _POSITION.search(message)
        if pos is not None:
            reason = f"{visible(message[: pos.start()])} (column {pos.group(2)})"
            raise TomlError(shown, reason, int(pos.group(1))) from None
        end = _AT_END.search(message)
        if end is not None:
            reason = f"{visible(message[: end.start()])} (at the end of the file)"
            raise TomlError(shown, reason, text.count("\n") + 1) from None
        raise TomlError(shown, visible(message)) from None
    except RecursionError:
        dotted = _deep_dotted_line(text, max_depth)
        if dotted is not None:  # tomli 2.x recurses on each part of a dotted key
            raise TomlError(
                shown, f"a dotted key nested more than {max_depth} levels deep", dotted
            ) from None
        raise TomlError(
            shown,
            "arrays or inline tables are nested too deeply",
            _deep_bracket_line(text, max_depth),
        ) from None
    except ValueError as exc:  # int-conversion limit; tomllib lets it through
        found = _LONG_DIGITS.search(text)
        line = text.count("\n", 0, found.start()) + 1 if found else None
        raise TomlError(
            shown, f"a number is too long ({visible(str(exc)).split(':')[0]})", line
        ) from None
    deep = _too_deep(data, max_depth)
    if deep is not None:
        raise TomlError(
            shown,
            f"{visible(deep)}: nested more than {max_depth} levels deep",
            _deep_bracket_line(text, max_depth),
        )
    return data


def _deep_dotted_line(text: str, max_depth: int) -> int | None:
    """The first line whose key (before `=`) has more than `max_depth` dots, if any."""
    for number, line in enumerate(text.splitlines(), 1):
        key = line.split("=", 1)[0]
        if "=" in line and key.count(".") > max_depth:
            return number
    return None


def read_toml(
    path: Path,
    where: str | None = None,
    *,
    what: str = "file",
    max_bytes: int = DEFAULT_MAX_BYTES,
    max_depth: int = DEFAULT_MAX_DEPTH,
) -> tuple[str, dict[str, Any]]:
    """The text and parsed contents of the TOML file at `path`.

    Unreadable, missing, oversized and non-UTF-8 files are one-line
    `UserError`s (`what` says which kind of file was expected, e.g.
    "scenario file"); so is everything `parse_toml` refuses.
    """
    shown = visible(where if where is not None else str(path))
    try:
        if path.is_dir():
            raise IsADirectoryError(path)
        # a FIFO or device is refused before it is opened (an open would block)
        with open_regular(path) as handle:
            raw = handle.read(max_bytes + 1)
    except FileNotFoundError:
        raise UserError(f"{shown}: {what} not found") from None
    except IsADirectoryError:
        raise UserError(f"{shown}: is a directory, not a {what}") from None
    except OSError as exc:
        raise UserError(f"{shown}: cannot read {what} ({exc.strerror or exc})") from None
    except UserError as exc:
        if not path.exists():
            raise UserError(f"{shown}: {what} not found") from None
        reason = str(exc).rpartition(": ")[2]
        raise UserError(f"{shown}: cannot read {what} ({reason})") from None
    if len(raw) > max_bytes:
        raise UserError(f"{shown}: {what} is larger than {max_bytes >> 20} MiB")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise UserError(f"{shown}:{line}: not a UTF-8 text file") from None
    return text, parse_toml(text, shown, max_depth=max_depth)


def _too_deep(data: Mapping[str, Any], max_depth: int) -> str | None:
    """The key path (shortened) of a value nested deeper than `max_depth`, walked iteratively."""
    stack: list[tuple[object, int, tuple[str, ...]]] = [(data, 0, ())]
    while stack:
        value, depth, keys = stack.pop()
        if depth > max_depth:
            shown = "".join(keys[:4]).lstrip(".")
            return shown + ("…" if len(keys) > 4 else "")
        if isinstance(value, dict):
            stack.extend((v, depth + 1, (*keys, f".{k}")) for k, v in value.items())
        elif isinstance(value, list):
            stack.extend((v, depth + 1, (*keys, f"[{i}]")) for i, v in enumerate(value))
    return None


def _deep_bracket_line(text: str, max_depth: int) -> int | None:
    """The line where brackets first nest deeper than `max_depth`, skipping strings and comments.

    Only for the error message after tomllib gave up, so it may be approximate
    for odd files; it never raises.
    """
    depth = 0
    line = 1
    i = 0
    n = len(text)
    while i < n:
        ch = text[i]
        if ch == "\n":
            line += 1
        elif ch == "#":
            end = text.find("\n", i)
            i = n if end < 0 else end
            continue
        elif ch in "\"'":
            quote = ch * 3 if text.startswith(ch * 3, i) else ch
            j = i + len(quote)
            while j < n and not text.startswith(quote, j):
                if text[j] == "\\" and ch == '"':
                    j += 1
                elif text[j] == "\n" and len(quote) == 1:
                    break
                j += 1
            line += text.count("\n", i, j)
            i = j + len(quote)
            continue
        elif ch in "[{":
            depth += 1
            if depth > max_depth:
                return line
        elif ch in "]}":
            depth = max(0, depth - 1)
        i += 1
    return None
