"""The command line's sizes ("10 GiB") and times ("2026-12-07T10:00", "-2h"), bounded.

Each parser turns one option's text into a number or raises `UserError` naming the
option (one line, exit 2): the boundary for `--min-free`, `--since` and `--until`.
Standard library only.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

from gputui.core.errors import UserError
from gputui.core.textsafe import visible

# Binary units as `nvidia-smi` and gputui print them, decimal ones as vendors write them;
# a bare K/M/G/T is binary (what `df -h` and Slurm's --mem mean).
_SIZE_UNITS = {
    "": 1,
    "b": 1,
    "k": 1 << 10,
    "m": 1 << 20,
    "g": 1 << 30,
    "t": 1 << 40,
    "kib": 1 << 10,
    "mib": 1 << 20,
    "gib": 1 << 30,
    "tib": 1 << 40,
    "kb": 10**3,
    "mb": 10**6,
    "gb": 10**9,
    "tb": 10**12,
}
# At most 20 digits on either side of the point: exact arithmetic, no huge integers.
_SIZE_RE = re.compile(r"([0-9]{1,20}(?:\.[0-9]{1,20})?) ?([A-Za-z]{0,3})")
MAX_SIZE = 1 << 50  # 1 PiB: no GPU is near it

_DURATION_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_RELATIVE_RE = re.compile(r"([+-])((?:[0-9]{1,9}(?:\.[0-9]{1,6})?[smhdw])+)")
_PART_RE = re.compile(r"([0-9]{1,9}(?:\.[0-9]{1,6})?)([smhdw])")
MAX_OFFSET_S = 100 * 366 * 86400  # a century
MAX_TIMESTAMP = 1e11  # the year 5138 (as the scenarios' start_timestamp)


def parse_size(text: str, option: str) -> int:
    """Bytes from "10GiB", "512 MiB", "8G", "80 GB" or a plain number of bytes."""
    m = _SIZE_RE.fullmatch(text.strip())
    unit = m.group(2).lower() if m else None
    if m is None or unit not in _SIZE_UNITS:
        raise UserError(f"{option}: {_quoted(text)} is not a size (e.g. 10GiB, 512MiB, 8G, 80GB)")
    size = int(Fraction(m.group(1)) * _SIZE_UNITS[unit])
    if size > MAX_SIZE:
        raise UserError(f"{option}: {_quoted(text)} is larger than 1 PiB")
    return size


def parse_when(text: str, option: str, *, start: float, end: float) -> float:
    """Unix time from an ISO 8601 time or an offset: "-2h" is two hours before `end`,
    "+30m" thirty minutes after `start` (a recording's span; `-1h30m` works too).

    An ISO time without an offset is local time, as a user reads a clock.
    """
    raw = text.strip()
    rel = _RELATIVE_RE.fullmatch(raw)
    if rel is not None:
        seconds = sum(float(n) * _DURATION_UNITS[u] for n, u in _PART_RE.findall(rel.group(2)))
        if seconds > MAX_OFFSET_S:
            raise UserError(f"{option}: {_quoted(text)} is more than a century")
        return end - seconds if rel.group(1) == "-" else start + seconds
    from datetime import datetime

    try:
        when = datetime.fromisoformat(raw.replace("Z", "+00:00") if raw.endswith("Z") else raw)
        stamp = when.timestamp()
    except (ValueError, OverflowError, OSError):
        raise UserError(
            f"{option}: {_quoted(text)} is neither an ISO time (2026-12-07T10:00, "
            "2026-12-07 10:00:00+00:00) nor an offset (-2h, -1h30m, +30m)"
        ) from None
    if not (math.isfinite(stamp) and 0 <= stamp <= MAX_TIMESTAMP):
        raise UserError(f"{option}: {_quoted(text)} is out of range (1970 to the year 5138)")
    return stamp


def _quoted(text: str, limit: int = 40) -> str:
    shown = visible(text)
    return repr(shown if len(shown) <= limit else shown[:limit] + "…")
