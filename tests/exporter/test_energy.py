"""The energy counter comes from the poll's own reading (DeviceSample.energy_j): present where the
source gives it, absent where not, and no second NVML read of it by the exporter."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pynvml
import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from gputui.exporter.families import ENERGY
from gputui.exporter.poller import Poller
from gputui.model.snapshot import Snapshot
from gputui.sources.simulated.scenario import load_scenario
from gputui.sources.simulated.source import SimulatedSource
from tests.fleet import write_scenario


class OneSnapshot:
    """A source that returns a fixed poll (what the Poller would get from NVML)."""

    name = "nvml"

    def __init__(self, snap: Snapshot) -> None:
        self.snap = snap
        self.polls = 0

    def poll(self) -> Snapshot:
        self.polls += 1
        return self.snap

    def close(self) -> None:
        pass


def _energy_samples(poller: Poller) -> list[tuple[str, float]]:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(poller)
    text = generate_latest(registry).decode()
    assert f"# TYPE {ENERGY} untyped" in text  # dcgm's name, no _total suffix
    return [
        (s.labels["gpu"], s.value)
        for f in text_string_to_metric_families(text)
        for s in f.samples
        if s.name == ENERGY
    ]


def test_energy_is_the_snapshots_reading(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_second_read(*_args: object) -> int:
        raise AssertionError("the exporter read the energy counter from NVML itself")

    monkeypatch.setattr(pynvml, "nvmlDeviceGetTotalEnergyConsumption", no_second_read)
    snap = SimulatedSource(load_scenario(write_scenario(tmp_path, "n")), clock=lambda: 5.0).poll()
    first, second = snap.devices[0], snap.devices[1]
    assert first.sample is not None and second.sample is not None
    # GPU 0 reads 123456.789 J (NVML's 123456789 mJ); GPU 1 cannot say (None: unsupported)
    snap = dataclasses.replace(
        snap,
        devices=(
            dataclasses.replace(first, sample=dataclasses.replace(first.sample, energy_j=123_456.789)),
            dataclasses.replace(second, sample=dataclasses.replace(second.sample, energy_j=None)),
            *snap.devices[2:],
        ),
    )
    source = OneSnapshot(snap)
    poller = Poller(source, interval=1.0, hostname="n")  # type: ignore[arg-type]
    poller.poll_once()
    samples = dict(_energy_samples(poller))
    assert samples["0"] == 123_456_789.0  # whole mJ, as dcgm-exporter exports them
    assert "1" not in samples
    assert source.polls == 1
