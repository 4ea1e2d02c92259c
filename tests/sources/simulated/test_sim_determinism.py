from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from gputui.core.resources import scenarios_dir
from gputui.model.snapshot import Snapshot
from gputui.sources.simulated.source import SimulatedSource

SHIPPED = sorted(p.name for p in scenarios_dir().glob("*.toml"))


def _at(path: Path | None, t: float) -> Snapshot:
    return SimulatedSource.from_scenario(path, clock=lambda: t).poll()


def test_the_three_documented_scenarios_ship() -> None:
    assert {"demo.toml", "demo-8gpu.toml", "faults.toml"} <= set(SHIPPED)


@pytest.mark.parametrize("name", SHIPPED)
@pytest.mark.parametrize("t", [0.0, 17.25, 95.0, 1234.5])
def test_same_seed_same_clock_same_snapshot(name: str, t: float) -> None:
    path = scenarios_dir() / name
    assert _at(path, t) == _at(path, t)


def test_values_do_not_depend_on_poll_history() -> None:
    times = iter([float(t) for t in range(0, 300, 3)] + [301.5])
    busy = SimulatedSource.from_scenario(clock=lambda: next(times))
    for _ in range(100):
        busy.poll()
    assert busy.poll() == _at(None, 301.5)


def test_different_seed_gives_different_values(
    write_scenario: Callable[[str, str], Path], timeline: Path
) -> None:
    text = timeline.read_text()
    other = write_scenario(text.replace("seed = 11", "seed = 12"), "other.toml")
    a, b = _at(timeline, 20.0), _at(other, 20.0)
    assert a.devices[0].sample != b.devices[0].sample
    # The scenario's own facts do not change with the seed.
    assert [d.info.name for d in a.devices] == [d.info.name for d in b.devices]
    assert [p.pid for p in a.processes] == [p.pid for p in b.processes]


def test_values_move_over_time() -> None:
    src = SimulatedSource.from_scenario(clock=lambda: 0.0)
    samples = {src.snapshot_at(float(t)).devices[1].sample for t in range(0, 60, 5)}
    assert len(samples) > 5


def test_default_clock_is_real_time_since_construction() -> None:
    src = SimulatedSource.from_scenario()
    snap = src.poll()
    assert snap.source == "simulated" and snap.simulated
    # Processes that started before the run report their age from the scenario's start_s.
    xorg = next(p for p in snap.processes if p.pid == 1874)
    assert xorg.running_s is not None and 86400 <= xorg.running_s < 86400 + 60


def test_injected_clock_gives_a_fixed_timestamp() -> None:
    assert _at(None, 5.0).timestamp == _at(None, 0.0).timestamp + 5.0


def test_with_host_false_has_no_host() -> None:
    src = SimulatedSource.from_scenario(with_host=False, clock=lambda: 1.0)
    assert src.poll().host is None
    assert src.name == "simulated"
