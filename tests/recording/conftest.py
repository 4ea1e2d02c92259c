"""Recordings made from the simulated GPUs on a test clock (no waiting)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from gputui.core.resources import scenario_path
from gputui.model.snapshot import Snapshot
from gputui.recording.store import Recorder
from gputui.sources.simulated.source import SimulatedSource


def simulated(name: str = "demo-8gpu") -> tuple[SimulatedSource, list[float]]:
    """The shipped scenario on a clock the test moves (`clock[0] = seconds`)."""
    clock = [0.0]
    return SimulatedSource.from_scenario(scenario_path(Path(name)), clock=lambda: clock[0]), clock


def record_polls(
    path: Path, polls: int, *, step: float = 1.0, name: str = "demo-8gpu", **options: object
) -> list[Snapshot]:
    """`polls` polls of a scenario, `step` seconds apart, written to `path`; what was written."""
    source, clock = simulated(name)
    written = []
    with Recorder(path, **options) as recorder:  # type: ignore[arg-type]
        for i in range(polls):
            clock[0] = i * step
            snapshot = source.poll()
            recorder.write(snapshot)
            written.append(snapshot)
    return written


@pytest.fixture
def recorded(tmp_path: Path) -> Callable[..., tuple[Path, list[Snapshot]]]:
    def make(polls: int = 150, **options: object) -> tuple[Path, list[Snapshot]]:
        path = tmp_path / "run.sqlite"
        return path, record_polls(path, polls, **options)  # type: ignore[arg-type]

    return make
