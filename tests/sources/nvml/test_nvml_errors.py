"""NotSupported, NoPermission, lost GPUs and init failures, through NvmlSource's real code path."""

from __future__ import annotations

import pynvml
import pytest

from gputui.sources.errors import SourceUnavailable
from gputui.sources.nvml.source import NvmlSource

NOT_SUPPORTED = pynvml.NVML_ERROR_NOT_SUPPORTED

# (pynvml function, fields it feeds, where the field lives)
PER_POLL = [
    ("nvmlDeviceGetUtilizationRates", ("utilization_gpu", "utilization_memory")),
    ("nvmlDeviceGetTemperatureV", ("temperature_c",)),
    ("nvmlDeviceGetFanSpeed", ("fan_pct",)),
    ("nvmlDeviceGetPowerUsage", ("power_w",)),
    ("nvmlDeviceGetEnforcedPowerLimit", ("power_limit_w",)),
    ("nvmlDeviceGetPerformanceState", ("performance_state",)),
    ("nvmlDeviceGetEncoderUtilization", ("encoder_util",)),
    ("nvmlDeviceGetDecoderUtilization", ("decoder_util",)),
    ("nvmlDeviceGetCurrentClocksEventReasons", ("throttle_reasons",)),
    ("nvmlDeviceGetTotalEccErrors", ("ecc_volatile_uncorrected",)),
]
STATIC = [
    ("nvmlDeviceGetUUID", "uuid"),
    ("nvmlDeviceGetPciInfo", "pci_bus_id"),
    ("nvmlDeviceGetCudaComputeCapability", "compute_capability"),
    ("nvmlDeviceGetArchitecture", "architecture"),
    ("nvmlDeviceGetPowerManagementLimit", "power_limit_w"),
    ("nvmlDeviceGetMigMode", "mig_mode"),
]


@pytest.mark.parametrize(("fn", "fields"), PER_POLL)
def test_not_supported_per_poll_field(fake_nvml, fn, fields):
    fake_nvml.gpus[0].errors[fn] = NOT_SUPPORTED
    src = NvmlSource.open(with_host=False)
    first = src.poll()
    second = src.poll()
    for snap in (first, second):
        dev = snap.devices[0]
        assert dev.failed is None
        for f in fields:
            assert getattr(dev.sample, f) is None
            assert f in dev.unsupported
        # the rest of the poll went on
        assert dev.sample.memory_used is not None
        assert snap.devices[1].sample is not None
        assert getattr(snap.devices[1].sample, fields[0]) is not None
    assert fake_nvml.n(fn, 0) == 1, "an unsupported field is not asked again"
    assert fake_nvml.n(fn, 1) == 2


@pytest.mark.parametrize(("fn", "field"), STATIC)
def test_not_supported_static_field(fake_nvml, fn, field):
    fake_nvml.gpus[0].errors[fn] = NOT_SUPPORTED
    dev = NvmlSource.open(with_host=False).poll().devices[0]
    assert dev.failed is None
    assert getattr(dev.info, field) is None
    assert dev.info.name == "NVIDIA GeForce RTX 3090"
    assert dev.sample is not None and dev.sample.utilization_gpu == 71


def test_not_supported_memory_blanks_every_memory_field(fake_nvml):
    fake_nvml.gpus[0].errors["nvmlDeviceGetMemoryInfo_v2"] = NOT_SUPPORTED
    src = NvmlSource.open(with_host=False)
    src.poll()
    dev = src.poll().devices[0]
    assert dev.info.memory_total is None
    for f in ("memory_used", "memory_free", "memory_total", "memory_reserved"):
        assert getattr(dev.sample, f) is None
        assert f in dev.unsupported
    # NotSupported is not a missing symbol: no fallback to v1, and no retry
    assert fake_nvml.n("nvmlDeviceGetMemoryInfo", 0) == 0
    assert fake_nvml.n("nvmlDeviceGetMemoryInfo_v2", 0) == 1


def test_not_supported_clock_kinds_are_separate(fake_nvml, monkeypatch):
    g = fake_nvml.gpus[0]
    original = fake_nvml.nvmlDeviceGetClockInfo

    def clock(handle, kind):
        if handle is g and kind == pynvml.NVML_CLOCK_MEM:
            fake_nvml.calls[("mem clock", 0)] += 1
            raise pynvml.NVMLError(NOT_SUPPORTED)
        return original(handle, kind)

    monkeypatch.setattr(pynvml, "nvmlDeviceGetClockInfo", clock)
    src = NvmlSource.open(with_host=False)
    src.poll()
    dev = src.poll().devices[0]
    assert dev.sample.sm_clock_mhz == 1800
    assert dev.sample.mem_clock_mhz is None
    assert "mem_clock_mhz" in dev.unsupported and "sm_clock_mhz" not in dev.unsupported
    assert fake_nvml.calls[("mem clock", 0)] == 1


def test_function_not_found_is_remembered_like_not_supported(fake_nvml):
    fake_nvml.missing.add("nvmlDeviceGetFanSpeed")
    src = NvmlSource.open(with_host=False)
    src.poll()
    snap = src.poll()
    assert snap.devices[0].sample.fan_pct is None
    assert "fan_pct" in snap.devices[0].unsupported
    assert fake_nvml.n("nvmlDeviceGetFanSpeed", 0) == 1


def test_no_permission_is_none_but_asked_again(fake_nvml):
    g = fake_nvml.gpus[0]
    g.errors["nvmlDeviceGetTotalEccErrors"] = pynvml.NVML_ERROR_NO_PERMISSION
    src = NvmlSource.open(with_host=False)
    snap = src.poll()
    dev = snap.devices[0]
    assert dev.failed is None
    assert dev.sample.ecc_volatile_uncorrected is None
    assert "ecc_volatile_uncorrected" not in dev.unsupported
    assert any("permission" in n for n in snap.notices)
    del g.errors["nvmlDeviceGetTotalEccErrors"]  # e.g. the admin relaxed the restriction
    snap = src.poll()
    assert snap.devices[0].sample.ecc_volatile_uncorrected == 5
    assert not any("permission" in n for n in snap.notices)
    assert fake_nvml.n("nvmlDeviceGetTotalEccErrors", 0) == 2


@pytest.mark.parametrize(
    "code",
    [pynvml.NVML_ERROR_NOT_FOUND, pynvml.NVML_ERROR_TIMEOUT, pynvml.NVML_ERROR_INVALID_ARGUMENT],
)
def test_transient_errors_blank_the_field_for_this_poll(fake_nvml, code):
    g = fake_nvml.gpus[0]
    g.errors["nvmlDeviceGetPowerUsage"] = code
    src = NvmlSource.open(with_host=False)
    dev = src.poll().devices[0]
    assert dev.failed is None and dev.sample.power_w is None
    assert "power_w" not in dev.unsupported
    del g.errors["nvmlDeviceGetPowerUsage"]
    assert src.poll().devices[0].sample.power_w == pytest.approx(251.5)


def test_gpu_lost_during_polling_others_keep_updating(fake_nvml):
    src = NvmlSource.open(with_host=False)
    before = src.poll()
    assert before.devices[0].failed is None
    fake_nvml.gpus[0].lost = True
    fake_nvml.gpus[1].util_gpu = 42
    snap = src.poll()
    lost, ok = snap.devices
    assert lost.sample is None
    assert lost.failed is not None and "lost" in lost.failed
    assert lost.info == before.devices[0].info, "static info is kept"
    assert ok.failed is None and ok.sample.utilization_gpu == 42
    assert [p.gpu_index for p in snap.processes] == [1]
    calls_after_loss = fake_nvml.n("nvmlDeviceGetUtilizationRates", 0)
    fake_nvml.gpus[1].util_gpu = 43
    snap = src.poll()
    assert snap.devices[0].failed == lost.failed
    assert snap.devices[1].sample.utilization_gpu == 43
    assert fake_nvml.n("nvmlDeviceGetUtilizationRates", 0) == calls_after_loss


def test_gpu_lost_in_the_process_list(fake_nvml):
    fake_nvml.gpus[0].errors["nvmlDeviceGetGraphicsRunningProcesses_v3"] = (
        pynvml.NVML_ERROR_GPU_IS_LOST
    )
    snap = NvmlSource.open(with_host=False).poll()
    assert snap.devices[0].failed is not None
    assert snap.devices[0].sample is None
    assert {p.gpu_index for p in snap.processes} == {1}


def test_unknown_error_fails_the_device(fake_nvml):
    fake_nvml.gpus[1].errors["nvmlDeviceGetUtilizationRates"] = pynvml.NVML_ERROR_UNKNOWN
    snap = NvmlSource.open(with_host=False).poll()
    assert snap.devices[1].failed and "unknown" in snap.devices[1].failed.lower()
    assert snap.devices[0].failed is None


def test_gpu_lost_at_open_keeps_what_was_read(fake_nvml):
    fake_nvml.gpus[1].lost = True
    snap = NvmlSource.open(with_host=False).poll()
    dev = snap.devices[1]
    assert dev.failed and "lost" in dev.failed
    assert dev.sample is None
    assert dev.info.index == 1
    assert snap.devices[0].sample is not None


def test_gpu_lost_half_way_through_static_info(fake_nvml):
    fake_nvml.gpus[1].errors["nvmlDeviceGetCudaComputeCapability"] = pynvml.NVML_ERROR_GPU_IS_LOST
    dev = NvmlSource.open(with_host=False).poll().devices[1]
    assert dev.failed and "lost" in dev.failed
    assert dev.info.name == "NVIDIA A100-SXM4-80GB"
    assert dev.info.uuid == fake_nvml.gpus[1].uuid
    assert dev.info.compute_capability is None


def test_handle_that_cannot_be_obtained(fake_nvml):
    fake_nvml.gpus[0].handle_error = pynvml.NVML_ERROR_GPU_IS_LOST
    snap = NvmlSource.open(with_host=False).poll()
    dev = snap.devices[0]
    assert dev.index == 0
    assert dev.failed and "lost" in dev.failed
    assert dev.sample is None
    assert snap.devices[1].sample.utilization_gpu == 98


def test_handle_denied(fake_nvml):
    fake_nvml.gpus[1].handle_error = pynvml.NVML_ERROR_NO_PERMISSION
    snap = NvmlSource.open(with_host=False).poll()
    assert snap.devices[1].failed and "Permission" in snap.devices[1].failed
    assert snap.devices[0].failed is None


@pytest.mark.parametrize(
    ("code", "words"),
    [
        (
            pynvml.NVML_ERROR_LIBRARY_NOT_FOUND,
            "NVIDIA driver library libnvidia-ml.so.1 not found (no NVIDIA driver installed?)",
        ),
        (pynvml.NVML_ERROR_DRIVER_NOT_LOADED, "driver is not loaded"),
        (pynvml.NVML_ERROR_NO_PERMISSION, "insufficient permissions"),
        (pynvml.NVML_ERROR_LIB_RM_VERSION_MISMATCH, "version mismatch"),
        (pynvml.NVML_ERROR_UNKNOWN, "Unknown Error"),
        (pynvml.NVML_ERROR_INSUFFICIENT_POWER, "Insufficient External Power"),
    ],
)
def test_init_failure_reasons(fake_nvml, code, words):
    fake_nvml.init_error = code
    with pytest.raises(SourceUnavailable) as err:
        NvmlSource.open(with_host=False)
    assert words in err.value.reason
    assert "\n" not in err.value.reason
    assert fake_nvml.n("nvmlDeviceGetCount") == 0


def test_no_gpus(fake_nvml):
    fake_nvml.gpus.clear()
    with pytest.raises(SourceUnavailable, match="no NVIDIA GPU"):
        NvmlSource.open(with_host=False)
    assert fake_nvml.shutdowns == 1


def test_count_failure_shuts_down(fake_nvml):
    fake_nvml.count_error = pynvml.NVML_ERROR_UNKNOWN
    with pytest.raises(SourceUnavailable, match="count"):
        NvmlSource.open(with_host=False)
    assert fake_nvml.shutdowns == 1


def test_open_source_auto_falls_back_with_the_reason(fake_nvml):
    from gputui.sources.base import open_source

    fake_nvml.init_error = pynvml.NVML_ERROR_LIBRARY_NOT_FOUND
    with pytest.raises(SourceUnavailable):
        open_source("nvml", with_host=False)
    try:
        import gputui.sources.simulated.source  # noqa: F401
    except ImportError:
        pytest.skip("simulated source not there yet")
    src, reason = open_source("auto", with_host=False)
    assert src.name != "nvml"
    assert reason is not None and "libnvidia-ml.so.1" in reason


def test_open_failing_after_init_shuts_nvml_down(fake_nvml, monkeypatch):
    import gputui.sources.nvml.source as nvml_module

    def broken() -> None:
        raise OSError("psutil exploded")

    monkeypatch.setattr(nvml_module, "_open_host_sampler", broken)
    with pytest.raises(OSError):
        NvmlSource.open(with_host=True)
    assert fake_nvml.initialized == 1 and fake_nvml.shutdowns == 1
