"""summarise: a run's statistics from snapshots with scripted values."""

from __future__ import annotations

import pytest

from gputui.usage.summary import summarise
from tests.usage.runs import GIB, T0, device, process, snap


def test_utilisation_percentiles_are_nearest_rank_over_the_samples() -> None:
    utils = [0] * 50 + [40] * 45 + [100] * 5
    run = summarise(snap(T0 + i, (device(utilization_gpu=u),)) for i, u in enumerate(utils))
    (gpu,) = run.gpus
    assert (gpu.util_p50, gpu.util_p95, gpu.util_max) == (0, 40, 100)
    assert gpu.util_samples == 100


def test_energy_is_the_trapezoid_of_power_in_watt_hours() -> None:
    powers = [100.0, 200.0, 100.0, 300.0]
    run = summarise(snap(T0 + i, (device(power_w=p),)) for i, p in enumerate(powers))
    (gpu,) = run.gpus
    assert gpu.energy_wh == pytest.approx((150 + 150 + 200) / 3600)
    assert gpu.energy_covered_s == 3


def test_a_gap_longer_than_the_bound_is_not_integrated_and_is_reported() -> None:
    times = [0, 1, 2, 3, 100, 101]
    run = summarise(snap(T0 + t, (device(power_w=360.0),)) for t in times)
    (gpu,) = run.gpus
    assert run.interval_s == 1 and run.gap_bound_s == 5
    assert gpu.gap_s == 97
    assert gpu.energy_covered_s == 4
    assert gpu.energy_wh == pytest.approx(4 * 360 / 3600)


def test_a_given_interval_sets_the_gap_bound() -> None:
    times = [0, 10, 20, 30]
    run = summarise((snap(T0 + t, (device(power_w=36.0),)) for t in times), interval_s=1.0)
    assert run.gpus[0].energy_wh is None and run.gpus[0].gap_s == 30
    run = summarise(snap(T0 + t, (device(power_w=36.0),)) for t in times)
    assert run.interval_s == 10 and run.gpus[0].energy_wh == pytest.approx(0.3)


def test_unknown_power_and_utilisation_stay_unknown_never_zero() -> None:
    run = summarise(
        snap(T0 + i, (device(power_w=None, utilization_gpu=None, memory_used=None),))
        for i in range(5)
    )
    (gpu,) = run.gpus
    assert gpu.energy_wh is None and gpu.energy_unknown_s == 4
    assert gpu.util_p50 is None and gpu.util_max is None and gpu.memory_peak is None


def test_an_interval_with_power_unknown_at_one_end_is_left_out() -> None:
    powers = [100.0, None, 100.0, 100.0]
    run = summarise(snap(T0 + i, (device(power_w=p),)) for i, p in enumerate(powers))
    (gpu,) = run.gpus
    assert gpu.energy_unknown_s == 2 and gpu.energy_covered_s == 1
    assert gpu.energy_wh == pytest.approx(100 / 3600)


def test_time_throttled_by_reason_idle_is_not_throttling() -> None:
    reasons = [("sw_power_cap",), ("sw_power_cap", "hw_thermal"), ("idle",), (), None, ()]
    run = summarise(snap(T0 + i, (device(throttle_reasons=r),)) for i, r in enumerate(reasons))
    (gpu,) = run.gpus
    assert gpu.throttled_s == 2
    assert gpu.throttle_by_reason == {"sw_power_cap": 2, "hw_thermal": 1, "idle": 1}
    assert gpu.throttle_unknown_s == 1


def test_reasons_never_known_leave_the_throttled_time_unknown() -> None:
    run = summarise(snap(T0 + i, (device(throttle_reasons=None),)) for i in range(3))
    assert run.gpus[0].throttled_s is None


def test_memory_peak_and_a_lost_gpu() -> None:
    devs = [device(memory_used=GIB), device(memory_used=7 * GIB), device(failed=True)]
    run = summarise(snap(T0 + i, (d,)) for i, d in enumerate(devs))
    (gpu,) = run.gpus
    assert gpu.memory_peak == 7 * GIB and gpu.memory_total == 80 * GIB
    assert gpu.samples == 2 and gpu.failed_samples == 1


def test_a_process_is_its_pid_and_start_a_reused_pid_is_another() -> None:
    first = [snap(T0 + i, (device(),), process(42, T0 + i, gpu_memory=3 * GIB)) for i in range(3)]
    second = [
        snap(T0 + i, (device(),), process(42, T0 + i, started=T0 + 3, gpu_memory=GIB))
        for i in range(3, 6)
    ]
    run = summarise([*first, *second])
    a, b = run.processes
    assert (a.pid, b.pid) == (42, 42)
    assert a.start == T0 - 100 and b.start == T0 + 3
    assert (a.first_seen, a.last_seen, a.ended) == (T0, T0 + 2, False)
    assert (b.first_seen, b.last_seen) == (T0 + 3, T0 + 5)
    assert (a.memory_peak, b.memory_peak) == (3 * GIB, GIB)


def test_a_process_the_host_cannot_see_keeps_its_identity_while_present() -> None:
    times = [0, 1, 2, 50, 51]
    run = summarise(snap(T0 + t, (device(),), process(7, T0 + t, started=None)) for t in times)
    a, b = run.processes
    assert a.start is None and (a.first_seen, a.last_seen) == (T0, T0 + 2)
    assert a.ended and (b.first_seen, b.last_seen) == (T0 + 50, T0 + 51)


def test_peak_memory_sums_a_process_over_its_gpus_and_keeps_each_gpu() -> None:
    devs = (device(0), device(1))
    run = summarise(
        snap(
            T0 + i,
            devs,
            process(9, T0 + i, gpu_index=0, gpu_memory=(i + 1) * GIB),
            process(9, T0 + i, gpu_index=1, gpu_memory=2 * GIB),
        )
        for i in range(3)
    )
    (p,) = run.processes
    assert p.gpus == (0, 1) and p.memory_peak == 5 * GIB
    assert p.memory_peak_by_gpu == {0: 3 * GIB, 1: 2 * GIB}


def test_energy_share_by_sm_percent_and_mean_sm() -> None:
    run = summarise(
        snap(
            T0 + i,
            (device(power_w=360.0),),
            process(1, T0 + i, sm_util=60),
            process(2, T0 + i, sm_util=20),
        )
        for i in range(3)
    )
    one, two = sorted(run.processes, key=lambda p: p.pid)
    assert one.energy_wh == pytest.approx(0.2 * 0.75) and one.energy_basis == "sm"
    assert two.energy_wh == pytest.approx(0.2 * 0.25)
    assert one.sm_mean == 60


def test_energy_share_falls_back_to_memory_and_says_so() -> None:
    run = summarise(
        snap(
            T0 + i,
            (device(power_w=360.0),),
            process(1, T0 + i, sm_util=None, gpu_memory=3 * GIB),
            process(2, T0 + i, sm_util=40, gpu_memory=GIB),
        )
        for i in range(3)
    )
    one, two = sorted(run.processes, key=lambda p: p.pid)
    assert one.energy_basis == "memory" and one.energy_wh == pytest.approx(0.2 * 0.75)
    assert one.sm_mean is None and two.sm_mean == 40


def test_energy_that_cannot_be_split_is_unknown_with_its_seconds() -> None:
    run = summarise(
        snap(T0 + i, (device(power_w=360.0),), process(1, T0 + i, sm_util=None, gpu_memory=None))
        for i in range(4)
    )
    (p,) = run.processes
    assert p.energy_wh is None and p.energy_basis is None and p.unapportioned_s == 3
    assert p.memory_peak is None


def test_pid_and_gpus_filters() -> None:
    devs = (device(0), device(1))
    snaps = [
        snap(T0 + i, devs, process(1, T0 + i, gpu_index=0), process(2, T0 + i, gpu_index=1))
        for i in range(3)
    ]
    assert [p.pid for p in summarise(snaps, pid=2).processes] == [2]
    only = summarise(snaps, gpus=frozenset({1}))
    assert [g.index for g in only.gpus] == [1] and [p.pid for p in only.processes] == [2]


def test_series_stay_bounded_over_a_long_run() -> None:
    run = summarise(snap(T0 + i, (device(utilization_gpu=i % 101),)) for i in range(20_000))
    points = run.series["util"][0]
    assert 100 < len(points) <= 400
    assert points[0][0] >= T0 and points[-1][0] <= T0 + 20_000


def test_repeated_or_out_of_order_snapshots_are_skipped() -> None:
    snaps = [snap(T0 + t, (device(power_w=100.0),)) for t in (0, 1, 1, 0.5, 2)]
    run = summarise(snaps)
    assert run.snapshots == 3 and run.gpus[0].energy_covered_s == 2


def test_an_empty_run() -> None:
    run = summarise([])
    assert run.start is None and run.gpus == [] and run.processes == []
