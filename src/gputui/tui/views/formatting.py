"""Turning snapshot values into short strings.

Kept free of Textual so the rules ("None reads N/A, never 0") are tested as
plain functions and shared by every widget.
"""

from __future__ import annotations

from collections.abc import Sequence

from gputui.render.snapshot_text import duration as text_duration

NA = "N/A"
GIB = 1024**3
MIB = 1024**2

_BLOCKS = " ▁▂▃▄▅▆▇█"


def na(value: object | None, fmt: str = "{}") -> str:
    return NA if value is None else fmt.format(value)


def gib(value: int | None, digits: int = 1) -> str:
    return NA if value is None else f"{value / GIB:.{digits}f}"


def size(value: int | None) -> str:
    """Human size with a unit that keeps 3-4 significant figures."""
    if value is None:
        return NA
    if value >= GIB:
        return f"{value / GIB:.1f} GiB"
    if value >= MIB:
        return f"{value / MIB:.0f} MiB"
    return f"{value / 1024:.0f} KiB"


def throughput_kbs(value: int | None) -> str:
    """PCIe throughput: NVML reports KiB/s."""
    if value is None:
        return NA
    if value >= 1024 * 1024:
        return f"{value / (1024 * 1024):.1f} GiB/s"
    if value >= 1024:
        return f"{value / 1024:.1f} MiB/s"
    return f"{value} KiB/s"


def percent_of(used: int | None, total: int | None) -> float | None:
    if used is None or not total:
        return None
    return 100.0 * used / total


def duration(seconds: float | None) -> str:
    """Process running time: 59s, 12:05, 3:04:05, 2d03h."""
    return text_duration(seconds, bare_seconds=True)


def spark(values: Sequence[float | None], width: int, lo: float = 0.0, hi: float = 100.0) -> str:
    """A one-line sparkline on a fixed scale.

    Textual's Sparkline scales between the min and max of its data, so a GPU
    pinned at 97 % draws as a flat floor line; a fixed 0..hi scale shows level
    as well as trend. Missing samples draw as blanks. The newest values are
    right-aligned so the line scrolls in from the right like `top`'s graphs.
    """
    if width <= 0:
        return ""
    tail = values[-width:] if isinstance(values, (list, tuple)) else list(values)[-width:]
    span = (hi - lo) or 1.0
    # The same values recur poll after poll (a shifted line): their blocks are kept per scale.
    blocks = _SPARK_BLOCKS.get((lo, span))
    if blocks is None or len(blocks) > _SPARK_BLOCKS_MAX:
        if len(_SPARK_BLOCKS) > 64:
            _SPARK_BLOCKS.clear()
        blocks = _SPARK_BLOCKS[(lo, span)] = {None: " "}
    out = []
    for v in tail:
        block = blocks.get(v)
        if block is None:
            frac = min(1.0, max(0.0, (v - lo) / span))  # type: ignore[operator]
            block = blocks[v] = _BLOCKS[max(1, round(frac * 8))]
        out.append(block)
    return " " * (width - len(out)) + "".join(out)


_SPARK_BLOCKS: dict[tuple[float, float], dict[float | None, str]] = {}
_SPARK_BLOCKS_MAX = 4096


def pstate(value: int | None) -> str:
    return NA if value is None else f"P{value}"
