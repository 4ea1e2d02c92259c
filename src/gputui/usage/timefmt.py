"""Times and durations as the report prints them."""

from __future__ import annotations

from datetime import datetime


def when(t: float | None) -> str:
    """Local time with its offset, to the second (what a user compares with a clock)."""
    if t is None:
        return "unknown"
    return datetime.fromtimestamp(t).astimezone().isoformat(sep=" ", timespec="seconds")


def duration(seconds: float | None) -> str:
    if seconds is None:
        return "unknown"
    s = round(seconds)
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60}m {s % 60:02d}s"
    return f"{s // 3600}h {s % 3600 // 60:02d}m"
