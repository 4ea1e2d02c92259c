"""A time series downsampled as it is read, for the report's plots: at most `max_points`
buckets, whatever the run's length (a bucket's width doubles when there are too many)."""

from __future__ import annotations

MAX_POINTS = 400


class Series:
    """Bucketed means of one metric; unknown values are skipped (a gap in the plot)."""

    __slots__ = ("_buckets", "max_points", "t0", "width")

    def __init__(self, t0: float, width: float, max_points: int = MAX_POINTS) -> None:
        self.t0 = t0
        self.width = max(width, 1e-3)
        self.max_points = max_points
        self._buckets: dict[int, list[float]] = {}

    def add(self, t: float, value: float | None) -> None:
        if value is None:
            return
        slot = self._buckets.setdefault(int((t - self.t0) // self.width), [0.0, 0])
        slot[0] += value
        slot[1] += 1
        if len(self._buckets) > self.max_points:
            self._halve()

    def _halve(self) -> None:
        merged: dict[int, list[float]] = {}
        for index, (total, count) in self._buckets.items():
            slot = merged.setdefault(index // 2, [0.0, 0])
            slot[0] += total
            slot[1] += count
        self._buckets = merged
        self.width *= 2

    def points(self) -> list[tuple[float, float]]:
        """(time at the bucket's middle, mean) in time order."""
        return [
            (self.t0 + (i + 0.5) * self.width, total / count)
            for i, (total, count) in sorted(self._buckets.items())
        ]
