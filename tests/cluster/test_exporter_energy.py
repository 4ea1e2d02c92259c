"""The energy counter, read at the pynvml boundary: present where NVML gives it, else absent."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pynvml
import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from gputui.exporter.energy import EnergyReader
from gputui.exporter.families import ENERGY, build_families
from gputui.telemetry.scenario import load_scenario
from gputui.telemetry.simulated import SimulatedSource

from .conftest import write_scenario


def test_energy_where_supported_absent_where_not(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    snap = SimulatedSource(load_scenario(write_scenario(tmp_path, "n")), clock=lambda: 5.0).poll()
    calls: Counter[int] = Counter()
    flaky = {"fail": True}

    def handle(index: int) -> int:
        return index

    def energy(handle: int) -> int:
        calls[handle] += 1
        if handle == 1:
            raise pynvml.NVMLError(pynvml.NVML_ERROR_NOT_SUPPORTED)
        if flaky["fail"]:
            flaky["fail"] = False
            raise pynvml.NVMLError(pynvml.NVML_ERROR_UNKNOWN)
        return 123_456_789

    monkeypatch.setattr(pynvml, "nvmlDeviceGetHandleByIndex", handle)
    monkeypatch.setattr(pynvml, "nvmlDeviceGetTotalEnergyConsumption", energy)
    reader = EnergyReader()
    assert reader.read(snap) == {}  # GPU 0: a transient error this poll; GPU 1: not supported
    assert reader.read(snap) == {0: 123_456_789}
    reader.read(snap)
    assert calls[1] == 1  # not supported is never asked again
    assert calls[0] == 3

    registry = CollectorRegistry(auto_describe=False)

    class Fixed:
        def collect(self):  # type: ignore[no-untyped-def]
            return build_families(snap, hostname="n", energy_mj={0: 123_456_789})

    registry.register(Fixed())  # type: ignore[arg-type]
    text = generate_latest(registry).decode()
    assert f"# TYPE {ENERGY} untyped" in text  # dcgm's name, no _total suffix
    samples = [
        s for f in text_string_to_metric_families(text) for s in f.samples if s.name == ENERGY
    ]
    assert [(s.labels["gpu"], s.value) for s in samples] == [("0", 123_456_789.0)]
