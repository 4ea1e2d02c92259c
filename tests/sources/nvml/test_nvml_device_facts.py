"""Device facts and MIG devices through NvmlSource, faked at the pynvml boundary (conftest.py)."""

from __future__ import annotations

import pynvml
import pytest

from gputui.sources.nvml.mig import profile_of
from gputui.sources.nvml.source import NvmlSource

from .conftest import FakeMig

MiB = 1024 * 1024
GiB = 1024 * MiB
NOT_SUPPORTED = pynvml.NVML_ERROR_NOT_SUPPORTED

STATIC = (
    "nvmlDeviceGetPowerManagementDefaultLimit",
    "nvmlDeviceGetPowerManagementLimitConstraints",
    "nvmlDeviceGetMaxPcieLinkGeneration",
    "nvmlDeviceGetMaxPcieLinkWidth",
    "nvmlDeviceGetEccMode",
    "nvmlDeviceGetTemperatureThreshold",
)
EVERY_POLL = ("nvmlDeviceGetTotalEnergyConsumption",)
# Set by an administrator (nvidia-smi -pm / -c) or a display server: every SLOW_INTERVAL_S.
SLOW = (
    "nvmlDeviceGetPersistenceMode",
    "nvmlDeviceGetDisplayActive",
    "nvmlDeviceGetComputeMode",
)
# The link retrains with load: read with the PCIe throughput, every pcie_interval_s.
LINK = ("nvmlDeviceGetCurrPcieLinkGeneration", "nvmlDeviceGetCurrPcieLinkWidth")
DYNAMIC = EVERY_POLL + SLOW + LINK


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_every_fact_is_read_with_its_unit(fake_nvml):
    g = fake_nvml.gpus[0]
    g.display_active = pynvml.NVML_FEATURE_ENABLED
    snap = NvmlSource.open(with_host=False).poll()
    info, s = snap.devices[0].info, snap.devices[0].sample
    assert s is not None
    assert info.pci_bus_id == "00000000:01:00.0"
    assert info.ecc_mode is True
    assert (info.power_default_limit_w, info.power_min_limit_w, info.power_max_limit_w) == (
        350.0,
        100.0,
        400.0,
    )
    assert (info.pcie_max_gen, info.pcie_max_width) == (4, 16)
    assert info.bar1_total == 256 * MiB
    assert info.temp_slowdown_c == 90
    assert s.persistence_mode is True
    assert s.display_active is True
    assert s.compute_mode == "exclusive_process"
    assert (s.pcie_gen, s.pcie_width) == (3, 16)
    assert s.bar1_used == 5 * MiB
    assert s.energy_j == pytest.approx(123_456.789)
    assert (s.encoder_util, s.decoder_util) == (12, 3)


def test_each_fact_is_read_at_its_own_cadence(fake_nvml):
    clock = Clock()
    src = NvmlSource.open(with_host=False, pcie_interval_s=2.0, slow_interval_s=30.0, clock=clock)
    for _ in range(3):  # at t = 0, 1, 2 s
        src.poll()
        src._pcie.join(5)
        clock.now += 1.0
    for fn in STATIC:
        assert fake_nvml.n(fn, 0) == 1, fn
    for fn in EVERY_POLL:
        assert fake_nvml.n(fn, 0) == 3, fn
    for fn in SLOW:
        assert fake_nvml.n(fn, 0) == 1, fn
    for fn in LINK:
        assert fake_nvml.n(fn, 0) == 2, fn  # t = 0 and t = 2
    # BAR1: read at open for the total; the first poll takes that reading, later ones ask
    assert fake_nvml.n("nvmlDeviceGetBAR1MemoryInfo", 0) == 3
    assert fake_nvml.n("nvmlDeviceGetMemoryInfo_v2", 0) == 3
    clock.now += 30.0
    src.poll()
    for fn in SLOW:
        assert fake_nvml.n(fn, 0) == 2, fn
    src.close()


def test_values_that_change_are_followed(fake_nvml):
    clock = Clock()
    src = NvmlSource.open(with_host=False, pcie_interval_s=2.0, slow_interval_s=30.0, clock=clock)
    g = fake_nvml.gpus[0]
    src.poll()
    g.pcie_gen, g.energy_mj, g.persistence = 1, 200_000_000, pynvml.NVML_FEATURE_DISABLED
    g.bar1_used = 7 * MiB
    s = src.poll().devices[0].sample
    assert s is not None
    assert s.energy_j == 200_000.0 and s.bar1_used == 7 * MiB  # every poll
    assert s.pcie_gen == 3 and s.persistence_mode is True  # not yet due
    clock.now += 2.0
    src.poll()  # starts the PCIe refresh in the background
    src._pcie.join(5)
    s = src.poll().devices[0].sample
    assert s is not None and s.pcie_gen == 1 and s.persistence_mode is True
    clock.now += 30.0
    s = src.poll().devices[0].sample
    assert s is not None and s.persistence_mode is False
    src.close()


def test_the_first_poll_reuses_what_open_read(fake_nvml):
    g = fake_nvml.gpus[0]
    src = NvmlSource.open(with_host=False)
    g.memory_used, g.bar1_used = 11 * GiB, 9 * MiB  # changed between open and the first poll
    first = src.poll().devices[0].sample
    second = src.poll().devices[0].sample
    assert first is not None and second is not None
    assert (first.memory_used, first.bar1_used) == (10 * GiB, 5 * MiB)  # the reading of open()
    assert (second.memory_used, second.bar1_used) == (11 * GiB, 9 * MiB)
    src.close()


@pytest.mark.parametrize("fn", STATIC + DYNAMIC + ("nvmlDeviceGetBAR1MemoryInfo",))
def test_not_supported_is_none_and_never_asked_again(fake_nvml, fn):
    fake_nvml.gpus[0].errors[fn] = NOT_SUPPORTED
    src = NvmlSource.open(with_host=False)
    for _ in range(3):
        snap = src.poll()
    assert fake_nvml.n(fn, 0) == 1
    dev = snap.devices[0]
    assert dev.failed is None
    info, s = dev.info, dev.sample
    assert s is not None
    got = {
        "nvmlDeviceGetPowerManagementDefaultLimit": [info.power_default_limit_w],
        "nvmlDeviceGetPowerManagementLimitConstraints": [
            info.power_min_limit_w,
            info.power_max_limit_w,
        ],
        "nvmlDeviceGetMaxPcieLinkGeneration": [info.pcie_max_gen],
        "nvmlDeviceGetMaxPcieLinkWidth": [info.pcie_max_width],
        "nvmlDeviceGetEccMode": [info.ecc_mode],
        "nvmlDeviceGetTemperatureThreshold": [info.temp_slowdown_c],
        "nvmlDeviceGetPersistenceMode": [s.persistence_mode],
        "nvmlDeviceGetDisplayActive": [s.display_active],
        "nvmlDeviceGetComputeMode": [s.compute_mode],
        "nvmlDeviceGetCurrPcieLinkGeneration": [s.pcie_gen],
        "nvmlDeviceGetCurrPcieLinkWidth": [s.pcie_width],
        "nvmlDeviceGetTotalEnergyConsumption": [s.energy_j],
        "nvmlDeviceGetBAR1MemoryInfo": [info.bar1_total, s.bar1_used],
    }[fn]
    assert got == [None] * len(got)  # N/A, never 0 or False
    # the other GPU is untouched
    other = snap.devices[1]
    assert other.sample is not None and other.sample.energy_j is not None
    assert other.info.bar1_total is not None


def test_bar1_unsupported_is_listed(fake_nvml):
    fake_nvml.gpus[0].errors["nvmlDeviceGetBAR1MemoryInfo"] = NOT_SUPPORTED
    dev = NvmlSource.open(with_host=False).poll().devices[0]
    assert {"bar1_total", "bar1_used"} <= dev.unsupported


def test_an_unknown_compute_mode_is_named_not_hidden(fake_nvml):
    fake_nvml.gpus[0].compute_mode = 9
    s = NvmlSource.open(with_host=False).poll().devices[0].sample
    assert s is not None and s.compute_mode == "mode 9"


# --- MIG ---------------------------------------------------------------------------------


def _mig_gpu(fake_nvml):
    g = fake_nvml.gpus[1]
    g.mig = pynvml.NVML_DEVICE_MIG_ENABLE
    g.migs = [
        FakeMig(g, 0, gpu_instance=1, memory_used=22 * GiB),
        FakeMig(
            g,
            1,
            gpu_instance=2,
            name="NVIDIA A100-SXM4-80GB MIG 2g.20gb",
            uuid="MIG-22222222-2222-3333-4444-555555555555",
            memory_total=19968 * MiB,
            memory_used=12 * GiB,
            bar1_total=1 * GiB,
        ),
    ]
    g.compute = [(2001, 20 * GiB), (2002, 12 * GiB), (2003, 1 * GiB)]
    g.instances = {2001: (1, 0), 2002: (2, 0)}
    g.errors["nvmlDeviceGetUtilizationRates"] = NOT_SUPPORTED
    return g


def test_mig_devices_are_read_under_their_parent(fake_nvml):
    _mig_gpu(fake_nvml)
    snap = NvmlSource.open(with_host=False).poll()
    dev = snap.devices[1]
    assert dev.info.mig_mode is True
    assert [m.index for m in dev.mig_devices] == [0, 1]
    m0, m1 = dev.mig_devices
    assert m0.profile == "3g.40gb" and m1.profile == "2g.20gb"
    assert m0.gpu_instance_id == 1 and m0.compute_instance_id == 0
    assert m1.uuid == "MIG-22222222-2222-3333-4444-555555555555"
    assert m0.memory_total == 40192 * MiB and m0.memory_used == 22 * GiB
    assert m0.memory_free == 40192 * MiB - 22 * GiB
    assert m1.bar1_total == 1 * GiB and m1.bar1_used == 4 * MiB
    assert m0.utilization_gpu is None and m0.utilization_memory is None  # NVML: NotSupported
    assert snap.devices[0].mig_devices == ()
    by_pid = {p.pid: p for p in snap.processes if p.gpu_index == 1}
    assert (by_pid[2001].gpu_instance_id, by_pid[2001].compute_instance_id) == (1, 0)
    assert by_pid[2002].gpu_instance_id == 2
    assert by_pid[2003].gpu_instance_id is None  # 0xFFFFFFFF: not in an instance
    assert dev.mig_device(2) is m1 and dev.mig_device(None) is None
    assert not any("MIG" in n for n in snap.notices)


def test_mig_enumeration_stops_at_not_found_and_happens_once(fake_nvml):
    _mig_gpu(fake_nvml)
    src = NvmlSource.open(with_host=False)
    for _ in range(3):
        snap = src.poll()
    # indices 0, 1 found, 2 NOT_FOUND: three lookups at open, none per poll
    assert fake_nvml.n("nvmlDeviceGetMigDeviceHandleByIndex", 1) == 3
    assert fake_nvml.n("nvmlDeviceGetMaxMigDeviceCount", 1) == 1
    assert fake_nvml.n("nvmlDeviceGetMaxMigDeviceCount", 0) == 0  # MIG off: not asked
    # utilization NotSupported on each MIG handle: asked once each, never again
    assert fake_nvml.calls[("nvmlDeviceGetUtilizationRates", ("mig", 1, 0))] == 1
    assert fake_nvml.calls[("nvmlDeviceGetMemoryInfo", ("mig", 1, 0))] == 4  # open + 3 polls
    assert len(snap.devices[1].mig_devices) == 2


def test_mig_memory_follows_the_polls(fake_nvml):
    g = _mig_gpu(fake_nvml)
    src = NvmlSource.open(with_host=False)
    src.poll()
    g.migs[1].memory_used = 3 * GiB
    assert src.poll().devices[1].mig_devices[1].memory_used == 3 * GiB


def test_mig_mode_without_devices_says_so(fake_nvml):
    g = fake_nvml.gpus[1]
    g.mig = pynvml.NVML_DEVICE_MIG_ENABLE
    snap = NvmlSource.open(with_host=False).poll()
    assert snap.devices[1].mig_devices == ()
    assert any("MIG is enabled on GPU 1 but NVML lists no MIG device" in n for n in snap.notices)


def test_a_lost_parent_fails_once_the_mig_reads_fail(fake_nvml):
    g = _mig_gpu(fake_nvml)
    src = NvmlSource.open(with_host=False)
    src.poll()
    g.lost = True
    snap = src.poll()
    dev = snap.devices[1]
    assert dev.failed is not None and "lost" in dev.failed
    assert dev.mig_devices == () and dev.sample is None
    assert snap.devices[0].failed is None


def test_a_binding_without_mig_functions_lists_none(fake_nvml):
    _mig_gpu(fake_nvml)
    fake_nvml.missing.add("nvmlDeviceGetMaxMigDeviceCount")
    snap = NvmlSource.open(with_host=False).poll()
    assert snap.devices[1].failed is None and snap.devices[1].mig_devices == ()


@pytest.mark.parametrize(
    ("name", "profile"),
    [
        ("NVIDIA A100-SXM4-80GB MIG 3g.40gb", "3g.40gb"),
        ("NVIDIA H100 80GB HBM3 MIG 1g.10gb+me", "1g.10gb+me"),
        ("NVIDIA A100-SXM4-80GB", None),
        (None, None),
    ],
)
def test_profile_from_the_name(name, profile):
    assert profile_of(name) == profile
