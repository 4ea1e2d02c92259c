"""The exporter tests' pieces: a host scenario and `gputui exporter` processes, stopped after."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fleet import write_scenario
from tests.prometheus_harness import ExporterProcess


@pytest.fixture
def scenario(tmp_path: Path) -> Path:
    return write_scenario(tmp_path, "node-a")


@pytest.fixture
def start_exporter() -> Iterator[type[ExporterProcess]]:
    started: list[ExporterProcess] = []

    class Tracked(ExporterProcess):
        def __init__(self, args: list[str], env: dict[str, str] | None = None) -> None:
            super().__init__(args, env)
            started.append(self)

    yield Tracked
    for e in started:
        e.stop()
