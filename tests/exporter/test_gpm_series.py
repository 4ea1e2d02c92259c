"""GPM's figures served under DCGM's profiling names (0-1) and read back by the Prometheus
source: the exporter's text, parsed as Prometheus does, assembled into the cluster's GPUs."""

from __future__ import annotations

import math
from pathlib import Path

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from gputui.core.resources import scenarios_dir
from gputui.exporter.poller import Poller
from gputui.sources.prometheus.api import Sample
from gputui.sources.prometheus.assemble import assemble
from gputui.sources.simulated.scenario import load_scenario
from gputui.sources.simulated.source import SimulatedSource

PROF = {
    "DCGM_FI_PROF_SM_ACTIVE": "sm_active_pct",
    "DCGM_FI_PROF_SM_OCCUPANCY": "sm_occupancy_pct",
    "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": "tensor_active_pct",
    "DCGM_FI_PROF_DRAM_ACTIVE": "dram_active_pct",
}


def _scenario(name: str) -> Path:
    return scenarios_dir() / name


def _scrape(source: SimulatedSource) -> list[Sample]:
    poller = Poller(source, interval=1.0)
    poller.poll_once()
    registry = CollectorRegistry(auto_describe=False)
    registry.register(poller)
    text = generate_latest(registry).decode()
    out = []
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out.append(Sample({"__name__": s.name, **s.labels}, 1000.0, s.value))
    return out


def test_gpm_is_exported_on_dcgms_scale_only_where_the_gpu_has_it() -> None:
    source = SimulatedSource(load_scenario(_scenario("demo-8gpu.toml")), clock=lambda: 300.0)
    snap = source.poll()
    samples = _scrape(source)
    for metric, field in PROF.items():
        got = {s.labels["gpu"]: s.value for s in samples if s.labels["__name__"] == metric}
        assert set(got) == {str(d.index) for d in snap.devices}, metric
        for dev in snap.devices:
            assert dev.sample is not None
            assert math.isclose(got[str(dev.index)], getattr(dev.sample, field) / 100.0)
            assert 0.0 <= got[str(dev.index)] <= 1.0


def test_a_gpu_without_gpm_has_no_series_not_a_zero() -> None:
    source = SimulatedSource(load_scenario(_scenario("demo.toml")), clock=lambda: 300.0)
    names = {s.labels["__name__"] for s in _scrape(source)}
    assert not names & set(PROF)  # an RTX 3090 and an A100: no GPM, no series


def test_the_prometheus_source_reads_gpm_back_as_percent() -> None:
    source = SimulatedSource(load_scenario(_scenario("demo-8gpu.toml")), clock=lambda: 300.0)
    snap = source.poll()
    samples = _scrape(source)
    fresh = [s for s in samples if s.labels["__name__"] == "gputui_gpu_up"]
    hosts = assemble(
        samples,
        [Sample(s.labels, 0.0, 1000.0) for s in fresh],
        [],
        1000.0,
        intervals={},
        known={},
        gputui_instances=set(),
    )
    (host,) = hosts
    for gpu in host.gpus:
        want = snap.devices[gpu.index].sample
        assert gpu.sample is not None and want is not None
        for field in PROF.values():
            assert math.isclose(getattr(gpu.sample, field), getattr(want, field), rel_tol=1e-9)


def test_a_mig_gpu_has_gpm_per_instance_and_none_for_the_card() -> None:
    from gputui.exporter.families import build_families
    from gputui.model.snapshot import DeviceInfo, DeviceSample, DeviceSnapshot, MigDevice, Snapshot

    migs = (
        MigDevice(
            index=0,
            gpu_instance_id=1,
            profile="4g.40gb",
            memory_used=1 << 30,
            memory_free=1 << 30,
            sm_active_pct=80.0,
            dram_active_pct=60.0,
        ),
        MigDevice(
            index=1,
            gpu_instance_id=5,
            profile="1g.20gb",
            memory_used=1 << 30,
            memory_free=1 << 30,
            sm_active_pct=12.0,
        ),
    )
    dev = DeviceSnapshot(
        info=DeviceInfo(index=0, name="NVIDIA H100 80GB HBM3", mig_mode=True),
        sample=DeviceSample(utilization_gpu=None, sm_active_pct=45.0, dram_active_pct=30.0),
        mig_devices=migs,
    )
    families = build_families(Snapshot(timestamp=0.0, source="nvml", devices=(dev,)), hostname="h")
    got = {
        (s.labels.get("GPU_I_ID"), s.labels.get("mig")): s.value
        for f in families
        if f.name == "DCGM_FI_PROF_SM_ACTIVE"
        for s in f.samples
    }
    assert got == {("1", "0:0"): 0.8, ("5", "0:1"): 0.12}  # no series for the card itself
    dram = [s for f in families if f.name == "DCGM_FI_PROF_DRAM_ACTIVE" for s in f.samples]
    assert [(s.labels["GPU_I_ID"], s.value) for s in dram] == [("1", 0.6)]
