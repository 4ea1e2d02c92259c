from __future__ import annotations

import os
import pwd
import subprocess
import sys
import time
from collections.abc import Iterator

import psutil
import pytest

from gputui.model.snapshot import GpuProcess
from gputui.sources.host.source import HostSampler
from tests.children import busy_child


@pytest.fixture
def child() -> Iterator[subprocess.Popen[bytes]]:
    with busy_child("gputui-test-marker") as proc:
        yield proc


def test_real_child_process_is_enriched(child: subprocess.Popen[bytes]) -> None:
    sampler = HostSampler()
    (first,) = sampler.enrich([GpuProcess(0, child.pid, "compute", gpu_memory=1 << 30)])
    assert first.host_visible
    assert first.user == pwd.getpwuid(os.getuid()).pw_name
    assert first.cmdline is not None and first.cmdline[-1] == "gputui-test-marker"
    assert first.name is not None and first.name.startswith("python")
    assert first.rss is not None and first.rss > 0  # a fresh interpreter may still be loading
    assert first.running_s is not None and first.running_s >= 0
    assert first.gpu_memory == 1 << 30 and first.gpu_index == 0  # NVML's fields are untouched
    assert first.cpu_percent is None  # no previous sample yet: N/A rather than psutil's 0.0
    # The child spins, but on a loaded machine it may get no CPU tick in a short gap.
    for _ in range(30):
        time.sleep(0.1)
        (second,) = sampler.enrich([GpuProcess(0, child.pid, "compute")])
        assert second.cpu_percent is not None
        if second.cpu_percent > 0:
            break
    assert second.cpu_percent > 0


def test_same_pid_on_two_gpus_is_read_once(child: subprocess.Popen[bytes], monkeypatch: pytest.MonkeyPatch) -> None:
    sampler = HostSampler()
    made: list[int] = []
    real = psutil.Process

    def counting(pid: int) -> psutil.Process:
        made.append(pid)
        return real(pid)

    monkeypatch.setattr(psutil, "Process", counting)
    out = sampler.enrich([GpuProcess(0, child.pid, "compute"), GpuProcess(1, child.pid, "compute")])
    assert made == [child.pid]
    assert [p.gpu_index for p in out] == [0, 1]
    assert out[0].cmdline == out[1].cmdline


def test_cache_evicts_processes_that_left() -> None:
    sampler = HostSampler()
    sampler.enrich([GpuProcess(0, os.getpid(), "compute")])
    assert os.getpid() in sampler._procs
    sampler.enrich([])
    assert sampler._procs == {}


def test_exited_process_stays_listed_invisible() -> None:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    sampler = HostSampler()
    (p,) = sampler.enrich([GpuProcess(2, proc.pid, "compute", gpu_memory=5)])
    assert not p.host_visible
    assert (p.user, p.name, p.cmdline, p.cpu_percent, p.rss, p.running_s, p.container) == (None,) * 7
    assert (p.gpu_index, p.pid, p.gpu_memory) == (2, proc.pid, 5)


def test_access_denied_keeps_the_process(monkeypatch: pytest.MonkeyPatch) -> None:
    class Denied:
        def __init__(self, pid: int) -> None:
            self.pid = pid

        def oneshot(self) -> Denied:
            return self

        def __enter__(self) -> None:
            return None

        def __exit__(self, *exc: object) -> None:
            return None

        def is_running(self) -> bool:
            return True

        def _deny(self, *a: object, **k: object) -> None:
            raise psutil.AccessDenied(self.pid)

        username = name = cmdline = cpu_percent = memory_info = create_time = status = _deny

    monkeypatch.setattr(psutil, "Process", Denied)
    sampler = HostSampler()
    (p,) = sampler.enrich([GpuProcess(0, 1, "graphics")])
    assert not p.host_visible and p.user is None and p.type == "graphics"


def test_partly_denied_keeps_what_it_could_read(monkeypatch: pytest.MonkeyPatch) -> None:
    real = psutil.Process

    class CmdlineDenied(real):  # type: ignore[misc, valid-type]
        def cmdline(self) -> list[str]:
            raise psutil.AccessDenied(self.pid)

    monkeypatch.setattr(psutil, "Process", CmdlineDenied)
    (p,) = HostSampler().enrich([GpuProcess(0, os.getpid(), "compute")])
    assert p.host_visible and p.cmdline is None and p.user == pwd.getpwuid(os.getuid()).pw_name


def test_zombie_or_vanished_while_reading(monkeypatch: pytest.MonkeyPatch) -> None:
    real = psutil.Process

    class Zombie(real):  # type: ignore[misc, valid-type]
        def username(self) -> str:
            raise psutil.ZombieProcess(self.pid)

    monkeypatch.setattr(psutil, "Process", Zombie)
    sampler = HostSampler()
    (p,) = sampler.enrich([GpuProcess(0, os.getpid(), "compute")])
    assert not p.host_visible
    assert sampler._procs == {}


def test_host_sample() -> None:
    sampler = HostSampler(hostname="box")
    first = sampler.sample()  # right after priming: too short an interval to mean anything
    assert first.hostname == "box" and first.cpu_percent is None and first.per_cpu_percent == ()
    time.sleep(0.2)
    snap = sampler.sample()
    assert snap.cpu_percent is not None and 0 <= snap.cpu_percent <= 100
    assert len(snap.per_cpu_percent) == psutil.cpu_count()
    assert snap.memory_total == psutil.virtual_memory().total
    assert snap.load_average is not None and len(snap.load_average) == 3
    assert snap.swap_total is not None


def test_default_hostname() -> None:
    import socket

    assert HostSampler().sample().hostname == socket.gethostname()


@pytest.mark.parametrize("pid", [-1, 2**31 - 1])
def test_odd_pids_never_raise(pid: int) -> None:
    (p,) = HostSampler().enrich([GpuProcess(0, pid, "compute")])
    assert not p.host_visible and p.pid == pid
