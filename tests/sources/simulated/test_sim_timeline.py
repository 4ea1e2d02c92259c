from __future__ import annotations

from pathlib import Path

import pytest

from gputui.core.resources import scenarios_dir
from gputui.model.snapshot import GPM_FIELDS, DeviceSample, Snapshot
from gputui.sources.simulated.gpu import LOST_REASON
from gputui.sources.simulated.source import SimulatedSource

GIB = 1 << 30


def _src(path: Path) -> SimulatedSource:
    return SimulatedSource.from_scenario(path, clock=lambda: 0.0)


def _pids(snap: Snapshot, gpu: int | None = None) -> set[int]:
    return {p.pid for p in snap.processes if gpu is None or p.gpu_index == gpu}


def _sample(snap: Snapshot, gpu: int) -> DeviceSample:
    s = snap.devices[gpu].sample
    assert s is not None
    return s


@pytest.mark.parametrize(
    ("t", "expected"),
    [(0.0, {200}), (9.99, {200}), (10.0, {100, 200}), (29.9, {100, 200}), (49.9, {100}),
     (50.0, set())],
)
def test_processes_start_and_finish_at_scenario_times(
    timeline: Path, t: float, expected: set[int]
) -> None:
    # pid 200 lives on GPU 1, which is lost at t=30: its processes go with it.
    assert _pids(_src(timeline).snapshot_at(t)) == expected


def test_process_fields_come_from_the_scenario(timeline: Path) -> None:
    snap = _src(timeline).snapshot_at(20.0)
    train = next(p for p in snap.processes if p.pid == 100)
    assert train.user == "alice"
    assert train.cmdline == ("python", "train.py", "--lr", "3e-4")
    assert train.name == "python"
    assert train.running_s == pytest.approx(10.0)
    assert train.container is None and train.host_visible
    serve = next(p for p in snap.processes if p.pid == 200)
    assert serve.container == "0123456789ab"  # 12 characters, like `docker ps`
    assert serve.container_pid == 7


def test_gpu_is_lost_after_lost_after_s_and_others_keep_updating(timeline: Path) -> None:
    src = _src(timeline)
    before = src.snapshot_at(29.0)
    assert before.devices[1].failed is None and before.devices[1].sample is not None
    later = [src.snapshot_at(t) for t in (30.0, 35.0, 40.0, 45.0)]
    for snap in later:
        lost = snap.devices[1]
        assert lost.failed == LOST_REASON and lost.sample is None
        assert lost.info.name == "NVIDIA A100-SXM4-80GB"  # still listed, with its identity
        assert 200 not in _pids(snap)
    assert len({_sample(s, 0) for s in later}) == len(later)  # GPU 0 still moves


def test_unsupported_fields_are_none_and_listed(timeline: Path) -> None:
    dev = _src(timeline).snapshot_at(20.0).devices[0]
    # and GPM's four figures: this GPU is below compute capability 9.0
    assert dev.unsupported == {"fan_pct", "ecc_volatile_uncorrected", "ecc_mode", *GPM_FIELDS}
    assert dev.sample is not None
    assert dev.sample.fan_pct is None and dev.sample.ecc_volatile_uncorrected is None
    assert dev.sample.temperature_c is not None  # supported ones are still there


@pytest.mark.parametrize("name", ["demo.toml", "demo-8gpu.toml", "faults.toml"])
def test_values_stay_physical(name: str) -> None:
    src = _src(scenarios_dir() / name)
    for t in range(-5, 400, 7):
        snap = src.snapshot_at(float(t))
        for dev in snap.devices:
            s = dev.sample
            if s is None:
                continue
            assert s.memory_total == dev.info.memory_total
            reserved = s.memory_reserved or 0
            assert s.memory_used is not None and s.memory_free is not None
            if "memory_reserved" in dev.unsupported:
                assert s.memory_used + s.memory_free <= s.memory_total
            else:
                assert s.memory_used + s.memory_free + reserved == s.memory_total
            assert s.utilization_gpu is None or 0 <= s.utilization_gpu <= 100
            if s.power_w is not None:
                assert 0 < s.power_w <= s.power_limit_w  # type: ignore[operator]
            if s.sm_clock_mhz is not None:
                assert s.sm_clock_mhz <= dev.info.max_sm_clock_mhz  # type: ignore[operator]
        on_gpu = sum(p.gpu_memory or 0 for p in snap.processes if p.gpu_index == 0)
        s0 = snap.devices[0].sample
        assert s0 is not None and s0.memory_used is not None
        assert abs(s0.memory_used - on_gpu) <= len(snap.processes) * (1 << 20)


def test_training_memory_climbs_then_plateaus(timeline: Path) -> None:
    src = _src(timeline)
    used = [_sample(src.snapshot_at(t), 0).memory_used or 0 for t in (10.0, 11.0, 13.0, 30.0, 45.0)]
    assert used[0] < used[1] < used[2]
    assert used[3] == pytest.approx(8 * GIB, rel=0.01)
    assert used[4] == pytest.approx(8 * GIB, rel=0.01)


def test_temperature_follows_power_with_lag(timeline: Path) -> None:
    src = _src(timeline)
    idle = _sample(src.snapshot_at(9.0), 0)
    just_started = _sample(src.snapshot_at(16.0), 0)
    warm = _sample(src.snapshot_at(48.0), 0)
    assert just_started.power_w is not None and idle.power_w is not None
    assert just_started.power_w > 3 * idle.power_w  # power reacts at once ...
    assert just_started.temperature_c is not None and warm.temperature_c is not None
    assert idle.temperature_c is not None
    assert warm.temperature_c - idle.temperature_c > 2 * abs(
        just_started.temperature_c - idle.temperature_c
    )  # ... temperature catches up later


def test_idle_gpu_reports_idle_state(timeline: Path) -> None:
    s = _sample(_src(timeline).snapshot_at(5.0), 0)
    assert s.utilization_gpu is not None and s.utilization_gpu <= 2
    assert s.performance_state == 8
    assert s.throttle_reasons == ()  # NvmlSource's convention: idle alone is not throttling
    assert s.sm_clock_mhz == 210  # the scenario's default idle clock


def test_power_cap_throttles_clocks() -> None:
    snap = _src(scenarios_dir() / "demo-8gpu.toml").snapshot_at(0.0)
    capped = [d.sample for d in snap.devices if d.sample and d.sample.throttle_reasons == ("sw_power_cap",)]
    free = [d.sample for d in snap.devices if d.sample and d.sample.throttle_reasons == ()]
    assert capped, "the pretraining job should hit the 700 W cap"
    for s in capped:
        assert s.power_w is not None and s.power_w >= 0.95 * 700
    if free:
        assert max(s.sm_clock_mhz or 0 for s in capped) <= max(s.sm_clock_mhz or 0 for s in free)


def test_simulated_host_is_deterministic_and_sane(timeline: Path) -> None:
    a = _src(timeline).snapshot_at(20.0).host
    b = _src(timeline).snapshot_at(20.0).host
    assert a is not None and a == b
    assert a.hostname == "unit-host"
    assert len(a.per_cpu_percent) == 4
    assert all(0 <= c <= 100 for c in a.per_cpu_percent)
    assert a.load_average is not None and len(a.load_average) == 3
    assert a.memory_total == 16 * GIB
    assert a.memory_used is not None and 0 < a.memory_used < a.memory_total


def test_invisible_processes_have_no_host_fields() -> None:
    snap = _src(scenarios_dir() / "faults.toml").snapshot_at(20.0)
    hidden = [p for p in snap.processes if not p.host_visible]
    assert hidden
    for p in hidden:
        assert (p.user, p.cmdline, p.cpu_percent, p.rss, p.running_s) == (None,) * 5
        assert p.gpu_memory is not None  # NVML still knows its memory
