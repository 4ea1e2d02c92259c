"""The replay's time bar as text, and the times a user types to jump to (Textual-free).

`bar_cells`: where the cursor and each alert fall on a bar of a given width.
`parse_jump`: `HH:MM[:SS]` (on the day of the replay's present moment, local time),
`YYYY-MM-DD HH:MM[:SS]`, or a step from now, `+90s`, `-5m`, `+1h`.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable

SPEEDS = (1.0, 10.0, 60.0)
_STEP = re.compile(r"([+-])\s*([0-9]+(?:\.[0-9]+)?)\s*([smh]?)")
_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "": 1.0}


def next_speed(speed: float) -> float:
    """x1 -> x10 -> x60 -> x1."""
    later = [s for s in SPEEDS if s > speed]
    return later[0] if later else SPEEDS[0]


def clock_text(t: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t))


def parse_jump(text: str, now: float) -> float | None:
    """The Unix time `text` names, or None when it names none (the dialog says so)."""
    text = text.strip()
    step = _STEP.fullmatch(text)
    if step:
        size = float(step[2]) * _UNITS[step[3]]
        return now + size if step[1] == "+" else now - size
    for form in ("%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M"):
        try:
            return time.mktime(time.strptime(text, form))
        except ValueError:
            pass
    day = time.strftime("%Y-%m-%d", time.localtime(now))
    for form in ("%H:%M:%S", "%H:%M"):
        try:
            time.strptime(text, form)
        except ValueError:
            continue
        return time.mktime(time.strptime(f"{day} {text}", f"%Y-%m-%d {form}"))
    return None


def bar_cells(width: int, span: tuple[float, float], at: float, marks: Iterable[float]) -> str:
    """A bar `width` cells wide: `━` played, `─` to come, `▲` an alert, `●` the present."""
    if width < 1:
        return ""
    t0, t1 = span
    length = max(t1 - t0, 1e-9)

    def cell(t: float) -> int:
        return min(width - 1, max(0, int((t - t0) / length * (width - 1) + 0.5)))

    here = cell(at)
    cells = ["━" if i < here else "─" for i in range(width)]
    for t in marks:
        cells[cell(t)] = "▲"
    cells[here] = "●"
    return "".join(cells)


def next_mark(marks: list[float], at: float, forward: bool) -> float | None:
    """The first alert after `at` (or the last before it); None when there is none."""
    if forward:
        return next((t for t in marks if t > at + 1e-6), None)
    return next((t for t in reversed(marks) if t < at - 1e-6), None)


def step_time(times: list[float], at: float, forward: bool) -> float | None:
    """The recorded poll after (or before) `at`."""
    return next_mark(times, at, forward)
