"""The largest batch that fits, solved once for every model kind.

Every moment of a step is affine in the batch (fixed + per-sample bytes), so the
largest batch is solved from those lines, then moved by one either way where
the rounding of the slack and of whole bytes moves the exact peak.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable


def largest_batch(
    lines: Iterable[tuple[float, float]],
    limit: int,
    peak: Callable[[int], int],
    *,
    scale: float,
    context: int,
    cap: int,
) -> int:
    """The largest batch b <= cap with peak(b) <= limit (0 if none).

    `lines`: each moment's (fixed, per-sample) tensor bytes; the peak of a moment is
    about (fixed + b * per) * scale + context.
    """
    best = cap
    for fixed_tensor, per_tensor in lines:
        fixed = fixed_tensor * scale + context
        if fixed > limit:
            return 0
        if per_tensor > 0:
            best = min(best, int((limit - fixed) // (per_tensor * scale)))
    # integer rounding of the slack can move the answer by one either way
    while best > 0 and peak(best) > limit:
        best -= 1
    while best < cap and peak(best + 1) <= limit:
        best += 1
    return best


def pow2_floor(n: int) -> int:
    return 0 if n < 1 else 1 << (n.bit_length() - 1)
