"""NvmlSource with the real HostSampler: NVML's PIDs become users and commands, or stay listed."""

from __future__ import annotations

import os
import subprocess
import sys

from gputui.model.snapshot import HostSnapshot
from gputui.sources.nvml.source import NvmlSource

GiB = 1024**3


def _exited_pid() -> int:
    """A PID that was real a moment ago and is gone now: NVML's list can lag behind exits."""
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def test_processes_enriched_by_the_host_sampler(fake_nvml):
    gone = _exited_pid()
    me = os.getpid()
    fake_nvml.gpus[1].compute = [(me, 2 * GiB), (gone, 3 * GiB)]
    fake_nvml.gpus[1].util_samples = []
    src = NvmlSource.open(with_host=True)
    snap = src.poll()
    src.close()
    assert isinstance(snap.host, HostSnapshot)
    procs = {p.pid: p for p in snap.processes}
    mine = procs[me]
    assert mine.host_visible is True
    assert mine.gpu_index == 1 and mine.gpu_memory == 2 * GiB  # NVML's fields survive
    assert mine.cmdline is not None and any("pytest" in a or "python" in a for a in mine.cmdline)
    assert mine.user is not None
    # the process that exited between NVML's list and psutil's look is still listed
    vanished = procs[gone]
    assert vanished.host_visible is False
    assert (vanished.gpu_index, vanished.gpu_memory, vanished.type) == (1, 3 * GiB, "compute")
    assert vanished.cmdline is None
    # processes NVML reported on the other GPU are kept too (their PIDs need not exist)
    assert {1001, 1002, 1003} <= set(procs)


def test_snapshot_command_says_a_listed_process_has_exited(fake_nvml, capsys):
    """`gputui snapshot` asks the host which listed PIDs are gone (sources/host/exited.py)
    and the table says so, rather than "another PID namespace"."""
    from gputui import cli

    gone = _exited_pid()
    # with a live PID of ours listed too: were every listed PID missing, gputui would take
    # it to run in a container and keep the namespace wording
    fake_nvml.gpus[0].compute = [(os.getpid(), 1 * GiB), (gone, 1 * GiB)]
    assert cli.main(["snapshot"]) == 0
    line = next(ln for ln in capsys.readouterr().out.splitlines() if f"{gone:>7}  " in ln)
    assert "exited" in line and "namespace" not in line
