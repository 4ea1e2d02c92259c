"""Identity fields are read once per process; a reused PID is read again."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from gputui.model.snapshot import GpuProcess
from gputui.sources.host import containers
from gputui.sources.host import source as host


@pytest.fixture
def child() -> Iterator[subprocess.Popen[bytes]]:
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)", "marker-arg"])
    deadline = time.monotonic() + 10  # wait for the exec: a GPU process is long past it
    while time.monotonic() < deadline:
        try:
            if psutil.Process(proc.pid).cmdline()[-1:] == ["marker-arg"]:
                break
        except (psutil.Error, IndexError):
            pass
        time.sleep(0.01)
    yield proc
    proc.kill()
    proc.wait()


def test_identity_read_once_then_again_after_pid_reuse(
    child: subprocess.Popen[bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[int] = []
    real = containers.container_of

    def counting(pid: int, *where: Path | None) -> str | None:
        calls.append(pid)
        return real(pid, *where)

    monkeypatch.setattr(host.containers, "container_of", counting)
    sampler = host.HostSampler()
    gp = GpuProcess(gpu_index=0, pid=child.pid, type="compute")
    for _ in range(3):
        (out,) = sampler.enrich([gp])
        assert out.cmdline is not None and out.cmdline[-1] == "marker-arg"
        assert out.rss is not None and out.rss > 0
    assert calls == [child.pid]

    # Pretend the PID now belongs to a process started at another time.
    created, ident = sampler._static[child.pid]
    assert created is not None
    sampler._static[child.pid] = (created - 100.0, ident)
    (out,) = sampler.enrich([gp])
    assert calls == [child.pid, child.pid]
    assert out.cpu_percent is None  # a new process has no previous CPU sample yet
