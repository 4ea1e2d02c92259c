"""Every field NvmlSource reports, checked against the fake GPU table it was read from."""

from __future__ import annotations

import pynvml
import pytest

from gputui.sources.nvml.reading import cuda_version_text, decode_throttle_reasons
from gputui.sources.nvml.source import NvmlSource

MiB = 1024 * 1024
GiB = 1024 * MiB
SM, MEM = pynvml.NVML_CLOCK_SM, pynvml.NVML_CLOCK_MEM


def test_system_versions(fake_nvml):
    fake_nvml.cuda_version = 12040
    src = NvmlSource.open(with_host=False)
    snap = src.poll()
    assert snap.source == "nvml"
    assert not snap.simulated
    assert snap.driver_version == "550.54.15"
    assert snap.cuda_driver_version == "12.4"
    assert snap.nvml_version == "12.550.54.15"
    assert snap.host is None
    src.close()


@pytest.mark.parametrize(
    ("raw", "text"), [(12040, "12.4"), (12020, "12.2"), (11080, "11.8"), (13000, "13.0")]
)
def test_cuda_version_text(raw, text):
    assert cuda_version_text(raw) == text


def test_static_info_every_field(fake_nvml):
    g = fake_nvml.gpus[1]
    snap = NvmlSource.open(with_host=False).poll()
    info = snap.devices[1].info
    assert info.index == 1
    assert info.name == "NVIDIA A100-SXM4-80GB"
    assert info.uuid == g.uuid
    assert info.pci_bus_id == "00000000:41:00.0"
    assert info.memory_total == 80 * GiB
    assert info.compute_capability == "8.0"
    assert info.architecture == "ampere"
    assert info.power_limit_w == 400.0
    assert info.max_sm_clock_mhz == 1410
    assert info.max_mem_clock_mhz == 1593
    assert info.mig_mode is False


@pytest.mark.parametrize(
    ("arch", "word"),
    [
        (pynvml.NVML_DEVICE_ARCH_VOLTA, "volta"),
        (pynvml.NVML_DEVICE_ARCH_ADA, "ada"),
        (pynvml.NVML_DEVICE_ARCH_HOPPER, "hopper"),
        (pynvml.NVML_DEVICE_ARCH_BLACKWELL, "blackwell"),
        (pynvml.NVML_DEVICE_ARCH_UNKNOWN, None),
    ],
)
def test_architecture_word(fake_nvml, arch, word):
    fake_nvml.gpus[0].arch = arch
    assert NvmlSource.open(with_host=False).poll().devices[0].info.architecture == word


def test_sample_every_field(fake_nvml):
    g = fake_nvml.gpus[0]
    s = NvmlSource.open(with_host=False).poll().devices[0].sample
    assert s is not None
    assert (s.utilization_gpu, s.utilization_memory) == (71, 33)
    # v2 memory: reserved is reported apart from used
    assert s.memory_total == 24 * GiB
    assert s.memory_used == 10 * GiB
    assert s.memory_reserved == 300 * MiB
    assert s.memory_free == 24 * GiB - 10 * GiB - 300 * MiB
    assert s.temperature_c == 64
    assert s.fan_pct == 55
    assert s.power_w == pytest.approx(251.5)
    assert s.power_limit_w == pytest.approx(340.0)  # enforced, not the management limit
    assert (s.sm_clock_mhz, s.mem_clock_mhz) == (1800, 9501)
    assert s.performance_state == 2
    assert (s.pcie_rx_kbs, s.pcie_tx_kbs) == (g.pcie_rx, g.pcie_tx)
    assert (s.encoder_util, s.decoder_util) == (12, 3)
    assert s.throttle_reasons == ("sw_power_cap", "sw_thermal")
    assert s.ecc_volatile_uncorrected == 5


def test_values_follow_the_gpu_between_polls(fake_nvml):
    src = NvmlSource.open(with_host=False)
    first = src.poll().devices[0].sample
    g = fake_nvml.gpus[0]
    g.util_gpu, g.temperature, g.memory_used, g.power_mw = 5, 41, 2 * GiB, 90_000
    second = src.poll().devices[0].sample
    assert first is not None and second is not None
    assert (first.utilization_gpu, second.utilization_gpu) == (71, 5)
    assert second.temperature_c == 41
    assert second.memory_used == 2 * GiB
    assert second.power_w == pytest.approx(90.0)


def test_memory_v1_fallback_on_a_driver_without_v2(fake_nvml):
    fake_nvml.missing.add("nvmlDeviceGetMemoryInfo_v2")
    src = NvmlSource.open(with_host=False)
    src.poll()
    dev = src.poll().devices[0]
    assert dev.sample is not None
    # v1 counts the reserved part as used, and cannot report it apart
    assert dev.sample.memory_used == 10 * GiB + 300 * MiB
    assert dev.sample.memory_total == 24 * GiB
    assert dev.sample.memory_reserved is None
    assert "memory_reserved" in dev.unsupported
    assert "memory_used" not in dev.unsupported
    # the missing v2 symbol was tried once per device, then v1 only
    assert fake_nvml.n("nvmlDeviceGetMemoryInfo_v2", 0) == 1
    # open + the second poll: the first poll takes the reading open() has just made
    assert fake_nvml.n("nvmlDeviceGetMemoryInfo", 0) == 2


def test_temperature_falls_back_to_the_unversioned_call(fake_nvml):
    fake_nvml.missing.add("nvmlDeviceGetTemperatureV")
    src = NvmlSource.open(with_host=False)
    src.poll()
    assert src.poll().devices[0].sample.temperature_c == 64
    assert fake_nvml.n("nvmlDeviceGetTemperatureV", 0) == 1
    assert fake_nvml.n("nvmlDeviceGetTemperature", 0) == 2


def test_temperature_when_the_binding_lacks_the_function(fake_nvml, monkeypatch):
    monkeypatch.delattr(pynvml, "nvmlDeviceGetTemperatureV")  # an older nvidia-ml-py
    assert NvmlSource.open(with_host=False).poll().devices[0].sample.temperature_c == 64


def test_event_reasons_fall_back_to_throttle_reasons(fake_nvml):
    fake_nvml.missing.add("nvmlDeviceGetCurrentClocksEventReasons")
    fake_nvml.gpus[0].reasons = 0x40
    src = NvmlSource.open(with_host=False)
    assert src.poll().devices[0].sample.throttle_reasons == ("hw_thermal",)
    assert fake_nvml.n("nvmlDeviceGetCurrentClocksThrottleReasons", 0) == 1


@pytest.mark.parametrize(
    ("mask", "names"),
    [
        (0, ()),
        (0x1, ()),  # idle alone is not throttling
        (0x4, ("sw_power_cap",)),
        (0x8, ("hw_slowdown",)),
        (0x10, ("sync_boost",)),
        (0x20, ("sw_thermal",)),
        (0x40, ("hw_thermal",)),
        (0x80, ("hw_power_brake",)),
        (0x2, ("app_clocks",)),
        (0x100, ("display_clocks",)),
        (0x1 | 0x4, ("idle", "sw_power_cap")),
        (0x8 | 0x40 | 0x80, ("hw_slowdown", "hw_thermal", "hw_power_brake")),
        (0x1000, ("other_0x1000",)),
    ],
)
def test_throttle_reason_names(mask, names):
    assert decode_throttle_reasons(mask) == names


def test_unknown_pstate_is_none(fake_nvml):
    fake_nvml.gpus[0].pstate = pynvml.NVML_PSTATE_UNKNOWN
    assert NvmlSource.open(with_host=False).poll().devices[0].sample.performance_state is None


def test_mig_enabled(fake_nvml):
    fake_nvml.gpus[1].mig = pynvml.NVML_DEVICE_MIG_ENABLE
    snap = NvmlSource.open(with_host=False).poll()
    assert snap.devices[1].info.mig_mode is True
    assert snap.devices[0].info.mig_mode is False
    # processes are still listed, against the parent GPU
    assert [(p.gpu_index, p.pid) for p in snap.processes if p.gpu_index == 1] == [(1, 2001)]
    assert any("MIG" in n and "GPU 1" in n for n in snap.notices)


def test_close_shuts_nvml_down_once(fake_nvml):
    src = NvmlSource.open(with_host=False)
    src.poll()
    src.close()
    src.close()
    assert fake_nvml.shutdowns == 1
    with pytest.raises(RuntimeError):
        src.poll()


def test_poll_from_a_worker_thread(fake_nvml):
    import threading

    src = NvmlSource.open(with_host=False)
    results = []
    threads = [threading.Thread(target=lambda: results.append(src.poll())) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 4
    assert all(r.devices[0].sample.utilization_gpu == 71 for r in results)
