from __future__ import annotations

import pytest

from gputui.history.metrics import METRICS, History
from gputui.model.snapshot import DeviceInfo, DeviceSample, DeviceSnapshot, Snapshot


def _dev(
    index: int,
    util: int | None = 50,
    power: float | None = 100.0,
    *,
    uuid: str = "",
    used: int | None = 25,
    total: int | None = 100,
    failed: bool = False,
) -> DeviceSnapshot:
    info = DeviceInfo(index=index, name="G", uuid=uuid or f"GPU-{index}")
    if failed:
        return DeviceSnapshot(info=info, failed="GPU is lost")
    sample = DeviceSample(
        utilization_gpu=util, power_w=power, temperature_c=60, memory_used=used, memory_total=total
    )
    return DeviceSnapshot(info=info, sample=sample)


def _snap(*devices: DeviceSnapshot) -> Snapshot:
    return Snapshot(timestamp=0.0, source="simulated", devices=devices)


def test_series_in_time_order_per_metric() -> None:
    h = History()
    for u in (10, 20, 30):
        h.add(_snap(_dev(0, util=u, power=u * 2.0), _dev(1, util=99)))
    assert h.series(0, "utilization") == [10.0, 20.0, 30.0]
    assert h.series(0, "power") == [20.0, 40.0, 60.0]
    assert h.series(0, "memory") == [25.0, 25.0, 25.0]  # percent of total
    assert h.series(0, "temperature") == [60.0] * 3
    assert h.series(1, "utilization") == [99.0] * 3


def test_bounded_by_maxlen() -> None:
    h = History(maxlen=5)
    for u in range(12):
        h.add(_snap(_dev(0, util=u)))
    assert h.series(0, "utilization") == [7.0, 8.0, 9.0, 10.0, 11.0]


def test_na_samples_are_skipped_not_zero() -> None:
    h = History()
    h.add(_snap(_dev(0, util=40, power=None, used=None)))
    h.add(_snap(_dev(0, util=None, power=None)))
    h.add(_snap(_dev(0, util=60, power=None)))
    assert h.series(0, "utilization") == [40.0, 60.0]
    assert h.series(0, "power") == []
    assert h.series(0, "memory") == [25.0, 25.0]


def test_memory_without_total_is_na() -> None:
    h = History()
    h.add(_snap(_dev(0, total=None)))
    h.add(_snap(_dev(0, total=0)))
    assert h.series(0, "memory") == []


def test_devices_that_disappear_are_dropped() -> None:
    h = History()
    h.add(_snap(_dev(0), _dev(1)))
    h.add(_snap(_dev(0)))
    assert h.devices() == [0]
    assert h.series(1, "utilization") == []
    h.add(_snap(_dev(0), _dev(1, util=7)))
    assert h.series(1, "utilization") == [7.0]  # starts afresh, no stale values


def test_failed_device_keeps_history_but_adds_nothing() -> None:
    h = History()
    h.add(_snap(_dev(0, util=5)))
    h.add(_snap(_dev(0, failed=True)))
    assert h.series(0, "utilization") == [5.0]


def test_a_different_gpu_at_the_same_index_starts_afresh() -> None:
    h = History()
    h.add(_snap(_dev(0, util=5, uuid="GPU-a")))
    h.add(_snap(_dev(0, util=6, uuid="GPU-b")))
    assert h.series(0, "utilization") == [6.0]


def test_unknown_metric_is_a_bug() -> None:
    with pytest.raises(ValueError, match="unknown metric"):
        History().series(0, "fan")
    assert set(METRICS) == {"utilization", "memory", "power", "temperature"}


def test_series_is_a_copy() -> None:
    h = History()
    h.add(_snap(_dev(0)))
    h.series(0, "utilization").append(1.0)
    assert h.series(0, "utilization") == [50.0]


def test_history_of_the_simulator_at_one_hz() -> None:
    from gputui.sources.simulated.source import SimulatedSource

    src = SimulatedSource.from_scenario(clock=lambda: 0.0)
    h = History(maxlen=60)
    for t in range(100):
        h.add(src.snapshot_at(float(t)))
    assert len(h.series(1, "utilization")) == 60
    assert all(0 <= v <= 100 for v in h.series(1, "memory"))
    # The A100 in demo.toml runs a training job: a real, non-flat history.
    assert len(set(h.series(1, "power"))) > 10


def test_an_na_point_leaves_the_series_when_it_leaves_the_window() -> None:
    h = History(maxlen=3)
    h.add(_snap(_dev(0, util=None, power=1.0)))
    h.add(_snap(_dev(0, util=20)))
    h.add(_snap(_dev(0, util=30)))
    assert h.series(0, "utilization") == [20.0, 30.0]
    h.add(_snap(_dev(0, util=40)))  # the N/A point is the one dropped
    assert h.series(0, "utilization") == [20.0, 30.0, 40.0]
    h.add(_snap(_dev(0, util=None, power=1.0)))
    assert h.series(0, "utilization") == [30.0, 40.0]


def _at(t: float, *devices: DeviceSnapshot) -> Snapshot:
    return Snapshot(timestamp=t, source="simulated", devices=devices)


def test_window_counts_back_from_the_newest_point_after_old_ones_are_dropped() -> None:
    h = History(maxlen=10)
    for t in range(25):
        h.add(_at(float(t), _dev(0, util=t if t != 22 else None, power=1.0)))
    assert h.span_s(0) == 9.0  # points 15..24 kept
    assert h.window(0, "utilization", 3.0) == [21.0, 23.0, 24.0]  # 22 was N/A
    assert h.window(0, "utilization", 100.0) == [float(t) for t in range(15, 25) if t != 22]


def test_a_poll_sooner_than_the_spacing_replaces_the_last_point() -> None:
    h = History(maxlen=4, min_spacing_s=1.0)
    for t, util in ((0.0, 10), (0.4, 11), (1.0, 12), (1.5, None), (2.0, 14)):
        h.add(_at(t, _dev(0, util=util, power=1.0)))
    # 0.4 replaced the values of 0.0's point, 1.5 those of 1.0's (with N/A); 2.0 is new
    assert h.series(0, "utilization") == [11.0, 14.0]
    assert h.span_s(0) == 2.0  # a replaced point keeps its time


def test_last_is_the_tail_of_series_without_the_na_points() -> None:
    h = History(maxlen=8)
    for u in (1, None, 3, 4, None, 6, 7, None, 9, 10):
        h.add(_snap(_dev(0, util=u, power=5.0)))
    full = h.series(0, "utilization")
    for count in (1, 2, 3, 5, 20):
        assert h.last(0, "utilization", count) == full[-count:]
    assert h.last(0, "utilization", 0) == []
    assert h.last(7, "utilization", 3) == []
    with pytest.raises(ValueError):
        h.last(0, "nope", 3)
