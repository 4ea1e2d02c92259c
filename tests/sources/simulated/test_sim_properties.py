"""Property tests: for any time and seed the simulator is deterministic and physical."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from gputui.sources.simulated.scenario import load_scenario, parse_scenario
from gputui.sources.simulated.source import SimulatedSource

SCENARIOS = (
    Path(__file__).resolve().parents[3] / "src" / "gputui" / "sources" / "simulated" / "scenarios"
)
DEMO = load_scenario(SCENARIOS / "demo.toml")

times = st.floats(min_value=-3600, max_value=48 * 3600, allow_nan=False)


def _with_seed(seed: int) -> SimulatedSource:
    import dataclasses

    return SimulatedSource(dataclasses.replace(DEMO, seed=seed), clock=lambda: 0.0)


@settings(max_examples=60, deadline=None)
@given(t=times, earlier=st.lists(times, max_size=5), seed=st.integers(0, 2**63))
def test_snapshot_at_t_ignores_earlier_polls(t: float, earlier: list[float], seed: int) -> None:
    busy = _with_seed(seed)
    for e in earlier:
        busy.snapshot_at(e)
    assert busy.snapshot_at(t) == _with_seed(seed).snapshot_at(t)


@settings(max_examples=60, deadline=None)
@given(t=times, seed=st.integers(0, 2**63))
def test_readings_stay_in_range(t: float, seed: int) -> None:
    snap = _with_seed(seed).snapshot_at(t)
    for dev in snap.devices:
        s = dev.sample
        assert s is not None
        assert s.utilization_gpu is not None and 0 <= s.utilization_gpu <= 100
        assert s.utilization_memory is not None and 0 <= s.utilization_memory <= 100
        assert s.power_w is not None and dev.info.power_limit_w is not None
        assert 0 < s.power_w <= dev.info.power_limit_w
        assert s.temperature_c is not None and 0 < s.temperature_c < 100
        assert s.fan_pct is None or 0 <= s.fan_pct <= 100
        assert s.memory_free is not None and s.memory_free >= 0
    assert snap.host is not None
    assert all(0 <= c <= 100 for c in snap.host.per_cpu_percent)
    for p in snap.processes:
        assert p.gpu_memory is not None and p.gpu_memory >= 0
        assert p.running_s is not None and p.running_s >= 0


def test_parse_scenario_accepts_what_load_reads() -> None:
    import pytest

    tomllib = pytest.importorskip("tomllib")
    data = tomllib.loads((SCENARIOS / "demo.toml").read_text())
    assert parse_scenario(data, label="x", name="demo.toml") == DEMO
