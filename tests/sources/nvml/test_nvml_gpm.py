"""GPM through NvmlSource, faked at the pynvml boundary (conftest.py): support, per-metric
gaps, per-GPU-instance values, a GPU lost between samples, and the call budget."""

from __future__ import annotations

import pynvml

from gputui.model.snapshot import GPM_FIELDS
from gputui.sources.nvml.source import NvmlSource

from .conftest import FakeMig, FakeNvml

# NVML's GPM metric ids: SM_UTIL, SM_OCCUPANCY, ANY_TENSOR_UTIL, DRAM_BW_UTIL
SM, OCC, TENSOR, DRAM = 2, 3, 5, 10


class Clock:
    """The source's clock: a poll comes a second after the last, as the dashboard's do."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        self.now += 1.0
        return self.now


def _open() -> NvmlSource:
    return NvmlSource.open(with_host=False, clock=Clock())


def _hopper(fake: FakeNvml, values: dict[int, float]) -> None:
    gpu = fake.gpus[0]
    gpu.name, gpu.cc, gpu.gpm = "NVIDIA H100 80GB HBM3", (9, 0), True
    gpu.gpm_values = dict(values)


def test_a_gpu_with_gpm_reports_its_four_figures(fake_nvml: FakeNvml) -> None:
    _hopper(fake_nvml, {SM: 31.0, OCC: 12.5, TENSOR: 8.0, DRAM: 14.0})
    src = _open()
    try:
        snap = src.poll()
        h100, other = snap.devices
        assert h100.sample is not None and h100.failed is None
        assert (h100.sample.sm_active_pct, h100.sample.sm_occupancy_pct) == (31.0, 12.5)
        assert (h100.sample.tensor_active_pct, h100.sample.dram_active_pct) == (8.0, 14.0)
        # the other GPU has none: every figure None and listed unsupported, never 0
        assert other.sample is not None
        assert all(getattr(other.sample, f) is None for f in GPM_FIELDS)
        assert set(GPM_FIELDS) <= other.unsupported
        fake_nvml.gpus[0].gpm_values[SM] = 97.0
        assert src.poll().devices[0].sample.sm_active_pct == 97.0  # type: ignore[union-attr]
    finally:
        src.close()


def test_gpm_support_is_asked_once_and_samples_only_where_supported(
    fake_nvml: FakeNvml,
) -> None:
    _hopper(fake_nvml, {SM: 50.0, OCC: 20.0, TENSOR: 10.0, DRAM: 30.0})
    src = _open()
    try:
        for _ in range(3):
            src.poll()
    finally:
        src.close()
    assert fake_nvml.n("nvmlGpmQueryDeviceSupport", 0) == 1
    assert fake_nvml.n("nvmlGpmQueryDeviceSupport", 1) == 1
    assert fake_nvml.n("nvmlGpmSampleGet", 0) == 4  # one at open, one per poll
    assert fake_nvml.n("nvmlGpmSampleGet", 1) == 0
    assert fake_nvml.n("nvmlGpmMetricsGet") == 3


def test_a_metric_the_gpu_lacks_is_none_and_not_asked_again(fake_nvml: FakeNvml) -> None:
    _hopper(fake_nvml, {SM: 40.0, OCC: 20.0, TENSOR: 10.0})  # no DRAM figure
    src = _open()
    try:
        first = src.poll().devices[0].sample
        assert first is not None and first.dram_active_pct is None and first.sm_active_pct == 40.0
        fake_nvml.gpus[0].gpm_values[DRAM] = 55.0  # NOT_SUPPORTED stays so, as NVML's rule
        assert src.poll().devices[0].sample.dram_active_pct is None  # type: ignore[union-attr]
    finally:
        src.close()


def test_support_query_not_supported_means_no_gpm(fake_nvml: FakeNvml) -> None:
    _hopper(fake_nvml, {SM: 40.0})
    fake_nvml.gpus[0].errors["nvmlGpmQueryDeviceSupport"] = pynvml.NVML_ERROR_NOT_SUPPORTED
    src = _open()
    try:
        dev = src.poll().devices[0]
    finally:
        src.close()
    assert dev.failed is None and dev.sample is not None
    assert dev.sample.sm_active_pct is None and "sm_active_pct" in dev.unsupported
    assert fake_nvml.n("nvmlGpmSampleGet") == 0


def test_a_driver_without_gpm_reads_everything_else(fake_nvml: FakeNvml) -> None:
    _hopper(fake_nvml, {SM: 40.0})
    fake_nvml.missing.add("nvmlGpmQueryDeviceSupport")
    src = _open()
    try:
        dev = src.poll().devices[0]
    finally:
        src.close()
    assert dev.failed is None and dev.sample is not None
    assert dev.sample.utilization_gpu is not None and dev.sample.sm_active_pct is None


def test_a_gpu_lost_between_samples_is_failed(fake_nvml: FakeNvml) -> None:
    _hopper(fake_nvml, {SM: 40.0, OCC: 1.0, TENSOR: 1.0, DRAM: 1.0})
    src = _open()
    try:
        src.poll()
        fake_nvml.gpus[0].errors["nvmlGpmSampleGet"] = pynvml.NVML_ERROR_GPU_IS_LOST
        dev = src.poll().devices[0]
    finally:
        src.close()
    assert dev.failed is not None and "lost" in dev.failed
    assert dev.sample is None


def test_each_gpu_instance_has_its_own_figures(fake_nvml: FakeNvml) -> None:
    _hopper(fake_nvml, {SM: 60.0, OCC: 30.0, TENSOR: 20.0, DRAM: 40.0})
    gpu = fake_nvml.gpus[0]
    gpu.mig = pynvml.NVML_DEVICE_MIG_ENABLE
    gpu.migs = [
        FakeMig(parent=gpu, index=0, gpu_instance=1, name="NVIDIA H100 80GB HBM3 MIG 4g.40gb"),
        FakeMig(parent=gpu, index=1, gpu_instance=5, name="NVIDIA H100 80GB HBM3 MIG 1g.20gb"),
    ]
    gpu.gpm_instances = {1: {SM: 80.0, OCC: 40.0, TENSOR: 50.0, DRAM: 60.0}, 5: {SM: 12.0}}
    src = _open()
    try:
        dev = src.poll().devices[0]
    finally:
        src.close()
    big, small = dev.mig_devices
    assert (big.sm_active_pct, big.tensor_active_pct) == (80.0, 50.0)
    assert small.sm_active_pct == 12.0 and small.dram_active_pct is None
    assert dev.sample is not None and dev.sample.sm_active_pct == 60.0
    assert fake_nvml.n("nvmlGpmMigSampleGet", 0) == 4  # two instances, at open and at the poll


def test_a_poll_right_after_open_waits_for_nothing_and_reads_them_later(
    fake_nvml: FakeNvml,
) -> None:
    """Too soon after open for an interval: no figure (not a 0), the source says they are
    pending, and `host_again` (what a one-shot `snapshot` calls after its short CPU
    window) fills them in."""
    _hopper(fake_nvml, {SM: 31.0, OCC: 12.5, TENSOR: 8.0, DRAM: 14.0})
    clock = Clock()
    src = NvmlSource.open(with_host=False, clock=lambda: clock.now)
    try:
        first = src.poll()
        assert first.devices[0].sample is not None
        assert first.devices[0].sample.sm_active_pct is None and src.gpm_pending
        clock.now += 0.2
        later = src.host_again(first)
        assert later.devices[0].sample is not None
        assert later.devices[0].sample.sm_active_pct == 31.0 and not src.gpm_pending
        assert later.devices[1] == first.devices[1]  # a GPU without GPM is left as it was
    finally:
        src.close()
