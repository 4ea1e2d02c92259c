"""PCIe throughput: cached, refreshed at most every interval, read concurrently across GPUs."""

from __future__ import annotations

import threading

import pynvml
import pytest

from gputui.sources.nvml.source import NvmlSource


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_first_poll_has_values(fake_nvml):
    snap = NvmlSource.open(with_host=False).poll()
    for dev, g in zip(snap.devices, fake_nvml.gpus, strict=True):
        assert (dev.sample.pcie_rx_kbs, dev.sample.pcie_tx_kbs) == (g.pcie_rx, g.pcie_tx)


def test_cached_within_the_interval_then_refreshed_in_the_background(fake_nvml):
    clock = Clock()
    src = NvmlSource.open(with_host=False, pcie_interval_s=2.0, clock=clock)
    src.poll()
    assert fake_nvml.n("nvmlDeviceGetPcieThroughput", 0) == 2  # rx + tx
    g = fake_nvml.gpus[0]
    g.pcie_rx = 1
    clock.now += 1.0
    snap = src.poll()
    assert snap.devices[0].sample.pcie_rx_kbs == 123_456, "cached value within the interval"
    assert fake_nvml.n("nvmlDeviceGetPcieThroughput", 0) == 2
    clock.now += 1.5
    src.poll()  # starts the background refresh
    src._pcie.join(5)
    assert fake_nvml.n("nvmlDeviceGetPcieThroughput", 0) == 4
    assert src.poll().devices[0].sample.pcie_rx_kbs == 1
    src.close()


def test_refresh_reads_the_gpus_concurrently(fake_nvml, make_gpu):
    fake_nvml.gpus[:] = [make_gpu(index=i) for i in range(4)]
    # each GPU's first PCIe read waits until all four are in flight at once: a
    # sequential reader would break the barrier (after its timeout) and get None
    barrier = threading.Barrier(4, timeout=30)

    def hook(gpu, counter):
        if counter == pynvml.NVML_PCIE_UTIL_RX_BYTES:
            try:
                barrier.wait()
            except threading.BrokenBarrierError:
                raise pynvml.NVMLError(pynvml.NVML_ERROR_TIMEOUT) from None

    fake_nvml.pcie_hook = hook
    snap = NvmlSource.open(with_host=False).poll()
    assert [d.sample.pcie_rx_kbs for d in snap.devices] == [123_456] * 4


def test_not_supported_pcie_is_not_asked_again(fake_nvml):
    clock = Clock()
    fake_nvml.gpus[0].errors["nvmlDeviceGetPcieThroughput"] = pynvml.NVML_ERROR_NOT_SUPPORTED
    src = NvmlSource.open(with_host=False, pcie_interval_s=2.0, clock=clock)
    for _ in range(3):
        snap = src.poll()
        src._pcie.join(5)
        clock.now += 3.0
    dev = snap.devices[0]
    assert (dev.sample.pcie_rx_kbs, dev.sample.pcie_tx_kbs) == (None, None)
    assert {"pcie_rx_kbs", "pcie_tx_kbs"} <= dev.unsupported
    assert fake_nvml.n("nvmlDeviceGetPcieThroughput", 0) == 2  # rx and tx, once each
    assert fake_nvml.n("nvmlDeviceGetPcieThroughput", 1) == 6
    src.close()


def test_lost_gpu_is_not_sampled(fake_nvml):
    clock = Clock()
    src = NvmlSource.open(with_host=False, pcie_interval_s=2.0, clock=clock)
    src.poll()
    fake_nvml.gpus[0].lost = True
    clock.now += 3
    src.poll()  # finds the loss; the refresh thread started before may still touch GPU 0
    src._pcie.join(5)
    n = fake_nvml.n("nvmlDeviceGetPcieThroughput", 0)
    clock.now += 3
    snap = src.poll()
    src._pcie.join(5)
    assert snap.devices[0].failed is not None
    assert fake_nvml.n("nvmlDeviceGetPcieThroughput", 0) == n
    src.close()


@pytest.mark.parametrize("interval", [0.0])
def test_zero_interval_refreshes_every_poll(fake_nvml, interval):
    clock = Clock()
    src = NvmlSource.open(with_host=False, pcie_interval_s=interval, clock=clock)
    for _ in range(3):
        src.poll()
        src._pcie.join(5)
    assert fake_nvml.n("nvmlDeviceGetPcieThroughput", 0) == 6
    src.close()
