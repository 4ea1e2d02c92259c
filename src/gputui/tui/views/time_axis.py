"""The time axis under the history charts: marks at 30 s, 1 min, 2 min... before now.

The charts put the newest point at the right edge and spread the window's
points (bucketed by their maximum) over the width; a column therefore stands
for `span / columns` seconds. Without marks a user could not tell a spike a
minute ago from one ten minutes ago.
"""

from __future__ import annotations

MARKS_S = (30, 60, 120, 300, 600, 900)


def mark_label(seconds: int) -> str:
    return f"-{seconds}s" if seconds < 60 else f"-{seconds // 60}m"


def axis_line(width: int, columns: int, span_s: float) -> str:
    """`width` cells: a `│` where each mark falls and its label left of it, then "now" at
    the right edge; only the marks inside the span that fit without overlapping."""
    if width < 4 or columns < 2 or span_s <= 0:
        return ""
    per_column = span_s / columns
    cells = [" "] * width
    now = "now"
    cells[width - len(now) :] = now
    free_until = width - len(now) - 1  # cells left of this are still free
    for seconds in MARKS_S:
        if seconds > span_s:
            break
        x = width - 1 - round(seconds / per_column)
        label = mark_label(seconds)
        start = x - len(label)
        if start < 0 or x >= free_until:
            continue
        cells[start:x] = label
        cells[x] = "│"
        free_until = start - 1
    return "".join(cells)
