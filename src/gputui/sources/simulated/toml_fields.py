"""Typed, bounded getters for one TOML table of a scenario file, and sizes like "24 GiB".

Each getter knows its field path, so every problem is one line naming the file and
the field (`demo.toml: gpu[1].memory_total: must be positive`), raised as UserError;
strings are made visible here, where they enter.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from fractions import Fraction
from typing import Any, NoReturn

from gputui.core.errors import UserError
from gputui.core.textsafe import visible
from gputui.sources.simulated.limits import MAX_LIST, MAX_SECONDS, MAX_SIZE, MAX_TEXT, MIN_SECONDS

_SIZE_UNITS = {
    "b": 1,
    "kib": 1 << 10,
    "mib": 1 << 20,
    "gib": 1 << 30,
    "tib": 1 << 40,
    "kb": 10**3,
    "mb": 10**6,
    "gb": 10**9,
    "tb": 10**12,
}
# At most 1000 digits: exact arithmetic stays cheap and below Python's int-conversion limit.
_SIZE_RE = re.compile(r"^\s*([0-9]{1,1000}(?:\.[0-9]{1,1000})?)\s*([A-Za-z]+)\s*$")


def parse_size(value: object) -> int | None:
    """Bytes from an int or a string like "24 GiB" / "512MiB" / "80 GB"; None if malformed.

    Exact decimal arithmetic (a fraction, not a float), truncated to whole
    bytes: a 400-digit size is a large int the range check refuses, not an
    OverflowError, and "0.1 KB" is 100 bytes, not 100.00000000000001.
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        m = _SIZE_RE.match(value)
        if m and m.group(2).lower() in _SIZE_UNITS:
            return int(Fraction(m.group(1)) * _SIZE_UNITS[m.group(2).lower()])
    return None


def brief(value: object, limit: int = 40) -> str:
    """`repr(value)` cut to `limit` characters, for echoing a bad value in one short line."""
    text = repr(value) if not isinstance(value, (dict, list)) else _kind(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


class Table:
    """One TOML table with typed getters that know their field path for error messages."""

    def __init__(self, data: Mapping[str, Any], label: str, path: str) -> None:
        self._data = data
        self._label = label
        self._path = path
        self._used: set[str] = set()

    def _where(self, key: str) -> str:
        return f"{self._path}.{key}" if self._path else key

    def fail(self, key: str, problem: str) -> NoReturn:
        raise UserError(f"{self._label}: {self._where(key)}: {problem}")

    def _get(self, key: str, required: bool) -> Any:
        self._used.add(key)
        if key not in self._data:
            if required:
                self.fail(key, "is required")
            return None
        return self._data[key]

    def reject_unknown(self) -> None:
        for key in self._data:
            if key not in self._used:
                self.fail(key, "unknown field")

    def table(self, key: str) -> Table:
        value = self._get(key, required=False)
        if value is None:
            value = {}
        if not isinstance(value, dict):
            self.fail(key, "must be a table")
        return Table(value, self._label, self._where(key))

    def table_list(self, key: str, *, required: bool, max_items: int) -> list[Table]:
        value = self._get(key, required=required)
        if value is None:
            return []
        if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
            self.fail(key, f"must be an array of tables ([[{key}]])")
        if len(value) > max_items:
            self.fail(key, f"at most {max_items} [[{key}]] tables, not {len(value)}")
        return [Table(v, self._label, f"{self._where(key)}[{i}]") for i, v in enumerate(value)]

    def _check_text(self, key: str, value: object, max_len: int, raw: bool = False) -> str:
        if not isinstance(value, str):
            self.fail(key, f"must be a string, not {_kind(value)}")
        if len(value) > max_len:
            self.fail(key, f"is longer than {max_len} characters")
        # the boundary: shown, never obeyed (`raw`: the command, visible per argument)
        return value if raw else visible(value)

    def text(
        self, key: str, *, default: str | None = None, max_len: int = MAX_TEXT, raw: bool = False
    ) -> str:
        value = self._get(key, required=default is None)
        if value is None:
            assert default is not None
            return default
        text = self._check_text(key, value, max_len, raw)
        if not text.strip():
            self.fail(key, "must not be empty")
        return text

    def opt_text(
        self, key: str, *, pattern: str | None = None, max_len: int = MAX_TEXT, raw: bool = False
    ) -> str | None:
        value = self._get(key, required=False)
        if value is None:
            return None
        text = self._check_text(key, value, max_len, raw)
        if pattern and not re.fullmatch(pattern, text):
            self.fail(key, f'{brief(text)} is not in the expected form (e.g. "8.6")')
        return text

    def text_list(
        self, key: str, *, default: list[str], max_len: int, max_items: int = MAX_LIST
    ) -> list[str]:
        value = self._get(key, required=False)
        if value is None:
            return default
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            self.fail(key, "must be a list of strings")
        if len(value) > max_items:
            self.fail(key, f"at most {max_items} entries, not {len(value)}")
        for i, item in enumerate(value):
            if len(item) > max_len:
                self.fail(f"{key}[{i}]", f"is longer than {max_len} characters")
        return [visible(item) for item in value]

    def choice(self, key: str, choices: tuple[str, ...], *, default: str) -> str:
        value = self.text(key, default=default)
        if value not in choices:
            self.fail(key, f"{brief(value)} is not one of {', '.join(choices)}")
        return value

    def boolean(self, key: str, *, default: bool) -> bool:
        value = self.opt_boolean(key)
        return default if value is None else value

    def opt_boolean(self, key: str) -> bool | None:
        value = self._get(key, required=False)
        if value is not None and not isinstance(value, bool):
            self.fail(key, f"must be true or false, not {_kind(value)}")
        return value

    def opt_number(
        self, key: str, *, lo: float, hi: float, tiny: float | None = None
    ) -> float | None:
        """A finite number in [lo, hi]; with `tiny`, also 0 or at least `tiny` in size."""
        value = self._get(key, required=False)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            self.fail(key, f"must be a number, not {_kind(value)}")
        if isinstance(value, float) and not math.isfinite(value):
            self.fail(key, "must be a finite number")
        # Compared before float(): an integer of 400 digits is too large, not an OverflowError.
        if value < lo:
            self.fail(key, f"must be at least {lo:g}")
        if value > hi:
            self.fail(key, f"must be at most {hi:g}")
        if tiny is not None and 0 < abs(value) < tiny:
            self.fail(key, f"must be 0 or at least {tiny:g}")
        return float(value)

    def number(
        self,
        key: str,
        *,
        lo: float,
        hi: float,
        default: float | None = None,
        tiny: float | None = None,
    ) -> float:
        if default is None:
            self._get(key, required=True)
        value = self.opt_number(key, lo=lo, hi=hi, tiny=tiny)
        if value is None:
            assert default is not None
            return default
        return value

    def duration(self, key: str, *, default: float, positive: bool = False) -> float:
        """Seconds: 0 (unless `positive`) or from MIN_SECONDS to MAX_SECONDS."""
        lo = MIN_SECONDS if positive else 0.0
        return self.number(key, default=default, lo=lo, hi=MAX_SECONDS, tiny=MIN_SECONDS)

    def opt_integer(self, key: str, *, minimum: int, maximum: int) -> int | None:
        value = self._get(key, required=False)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            self.fail(key, f"must be an integer, not {_kind(value)}")
        if value < minimum:
            self.fail(key, "must be positive" if minimum == 1 else f"must be at least {minimum}")
        if value > maximum:
            self.fail(key, f"must be at most {maximum}")
        return int(value)

    def integer(self, key: str, *, minimum: int, maximum: int, default: int | None = None) -> int:
        if default is None:
            self._get(key, required=True)
        value = self.opt_integer(key, minimum=minimum, maximum=maximum)
        if value is None:
            assert default is not None
            return default
        return value

    def size(self, key: str, *, default: int | None = None, positive: bool = False) -> int:
        """Bytes (an integer or a string with a unit), from 0 (or 1) to MAX_SIZE."""
        value = self._get(key, required=default is None)
        if value is None:
            assert default is not None
            return default
        size = parse_size(value)
        if size is None:
            self.fail(key, f'{brief(value)} is not a size (bytes, or a string like "24 GiB")')
        if size < 0 or (positive and size == 0):
            self.fail(key, "must be positive")
        if size > MAX_SIZE:
            self.fail(key, f"must be at most {MAX_SIZE >> 50} PiB ({MAX_SIZE} bytes)")
        return size


def _kind(value: object) -> str:
    return {
        bool: "a boolean",
        int: "an integer",
        float: "a number",
        str: "a string",
        list: "an array",
        dict: "a table",
    }.get(type(value), type(value).__name__)
