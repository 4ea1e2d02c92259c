"""How fit output writes sizes, FLOPs and batch counts: one format for every model kind,
the CLI, the TUI and the fleet (kept out of fit/report so the engines can use it too)."""

from __future__ import annotations

from gputui.fit.core.batch import pow2_floor


def gib(n: int | float) -> str:
    if abs(n) >= 2**30:
        return f"{n / 2**30:.2f} GiB"
    if abs(n) >= 2**20:
        return f"{n / 2**20:.1f} MiB"
    if abs(n) >= 2**10:
        return f"{n / 2**10:.1f} KiB"
    return f"{int(n)} B"


def flops_text(n: float) -> str:
    for unit, scale in (("TFLOPs", 1e12), ("GFLOPs", 1e9), ("MFLOPs", 1e6), ("kFLOPs", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n:.0f} FLOPs"


def batch_text(n: int | None) -> str:
    """A layer model's batch: '1,024 (1,024)' with its power-of-two floor."""
    if n is None:
        return "-"
    if n >= 1 << 24:
        return "unbounded"
    if n == 0:
        return "0"
    return f"{n:,} ({pow2_floor(n):,})"


def count(n: int) -> str:
    """A transformer's batch or token count; the search's ceiling reads 'unbounded'."""
    if n >= 1 << 20 and n == 1 << 20:
        return "unbounded"
    return f"{n:,}"
