"""One GPU's run: utilisation percentiles, memory peak, energy and time throttled.

Energy is the trapezoid of power between consecutive samples. An interval longer
than the gap bound (a few polling intervals: the recorder stopped, the machine
slept) is not integrated, and neither is one with an unknown power at either end:
both are counted in seconds and reported, so an energy figure always says what it
covers. Time throttled is each interval's length given to the reasons its first
sample held (left-point rule), over the same intervals.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gputui.model.snapshot import DeviceSnapshot
from gputui.usage.histogram import PercentHistogram

# Clock-event reasons that are not throttling: an idle GPU clocks down, application
# clocks and display clocks are settings, not limits the GPU hit.
NOT_THROTTLING = frozenset({"idle", "app_clocks", "display_clocks"})


@dataclass
class GpuSummary:
    """What a GPU did over the run; None where nothing known was seen."""

    index: int
    name: str
    samples: int  # polls that read the GPU (not failed)
    failed_samples: int
    util_p50: int | None
    util_p95: int | None
    util_max: int | None
    util_samples: int  # samples with a known utilisation (the percentiles' base)
    memory_peak: int | None
    memory_total: int | None
    energy_wh: float | None
    energy_covered_s: float  # the time the energy integrates
    energy_unknown_s: float  # intervals with an unknown power at either end
    gap_s: float  # intervals longer than the gap bound: not integrated
    throttled_s: float | None  # None when no interval had known reasons
    throttle_by_reason: dict[str, float] = field(default_factory=dict)
    throttle_unknown_s: float = 0.0


class GpuUsage:
    """Accumulates one GPU's samples in time order (`add`), then `summary()`."""

    def __init__(self, index: int, name: str, gap_bound_s: float) -> None:
        self.index = index
        self.name = name
        self.gap_bound_s = gap_bound_s
        self.util = PercentHistogram()
        self.samples = 0
        self.failed = 0
        self.memory_peak: int | None = None
        self.memory_total: int | None = None
        self.joules = 0.0
        self.covered_s = 0.0
        self.power_unknown_s = 0.0
        self.gap_s = 0.0
        self.by_reason: dict[str, float] = {}
        self.throttled_s = 0.0
        self.reasons_known_s = 0.0
        self.reasons_unknown_s = 0.0
        # the previous sample: time, power, throttle reasons
        self._prev: tuple[float, float | None, tuple[str, ...] | None] | None = None

    def add(self, t: float, device: DeviceSnapshot) -> float | None:
        """One poll of this GPU; returns the joules of the interval it closes, None when that
        interval is not integrated (first sample, gap, unknown power, failed GPU)."""
        sample = device.sample
        if sample is None:
            self.failed += 1
            self._prev = None
            return None
        self.samples += 1
        if sample.utilization_gpu is not None:
            self.util.add(sample.utilization_gpu)
        total = sample.memory_total if sample.memory_total is not None else device.info.memory_total
        if total is not None:
            self.memory_total = total
        used = sample.memory_used
        if used is not None and (self.memory_peak is None or used > self.memory_peak):
            self.memory_peak = used
        joules = self._interval(t, sample.power_w, sample.throttle_reasons)
        self._prev = (t, sample.power_w, sample.throttle_reasons)
        return joules

    def _interval(
        self, t: float, power: float | None, reasons: tuple[str, ...] | None
    ) -> float | None:
        if self._prev is None:
            return None
        t_prev, p_prev, r_prev = self._prev
        dt = t - t_prev
        if dt <= 0:
            return None
        if dt > self.gap_bound_s:
            self.gap_s += dt
            return None
        if r_prev is None:
            self.reasons_unknown_s += dt
        else:
            self.reasons_known_s += dt
            limiting = [r for r in r_prev if r not in NOT_THROTTLING]
            if limiting:
                self.throttled_s += dt
            for reason in r_prev:
                self.by_reason[reason] = self.by_reason.get(reason, 0.0) + dt
        if p_prev is None or power is None:
            self.power_unknown_s += dt
            return None
        joules = (p_prev + power) / 2 * dt
        self.joules += joules
        self.covered_s += dt
        return joules

    def summary(self) -> GpuSummary:
        return GpuSummary(
            index=self.index,
            name=self.name,
            samples=self.samples,
            failed_samples=self.failed,
            util_p50=self.util.percentile(50),
            util_p95=self.util.percentile(95),
            util_max=self.util.maximum(),
            util_samples=self.util.total,
            memory_peak=self.memory_peak,
            memory_total=self.memory_total,
            energy_wh=self.joules / 3600 if self.covered_s > 0 else None,
            energy_covered_s=self.covered_s,
            energy_unknown_s=self.power_unknown_s,
            gap_s=self.gap_s,
            throttled_s=self.throttled_s if self.reasons_known_s > 0 else None,
            throttle_by_reason=dict(sorted(self.by_reason.items(), key=lambda kv: -kv[1])),
            throttle_unknown_s=self.reasons_unknown_s,
        )
