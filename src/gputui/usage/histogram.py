"""Exact percentiles of whole percentages (0-100) in constant memory."""

from __future__ import annotations

import math


class PercentHistogram:
    """Counts of each whole percentage: NVML's utilisation is an integer 0-100, so 101
    counters give exact nearest-rank percentiles however many samples there are."""

    __slots__ = ("counts", "total")

    def __init__(self) -> None:
        self.counts = [0] * 101
        self.total = 0

    def add(self, value: int) -> None:
        self.counts[min(100, max(0, int(value)))] += 1
        self.total += 1

    def percentile(self, q: float) -> int | None:
        """The nearest-rank percentile (q in 0-100): the least value at or above which
        `q` % of the samples lie; None without samples."""
        if self.total == 0:
            return None
        rank = max(1, math.ceil(q / 100 * self.total))
        seen = 0
        for value, count in enumerate(self.counts):
            seen += count
            if seen >= rank:
                return value
        return 100  # unreachable: the counts add up to total

    def maximum(self) -> int | None:
        return next((v for v in range(100, -1, -1) if self.counts[v]), None)
