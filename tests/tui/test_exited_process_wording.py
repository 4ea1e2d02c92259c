"""A process that exited while NVML still lists it is said to have exited,
by the kill path and by `snapshot`, not "not visible from this PID namespace"."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace

from conftest import make_process, make_snapshot

from gputui.render.snapshot_text import render
from gputui.sources.host.exited import exited_pids
from gputui.tui.views.kill import KillPolicy


def exited_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid  # reaped: no such process now (reuse this soon is most unlikely)


def test_kill_says_exited_for_a_listed_process_that_is_gone() -> None:
    pid = exited_pid()
    proc = make_process(0, pid, host_visible=False, user=None, cmdline=None, name=None)
    policy = KillPolicy(is_root=lambda: True)
    ident, why = policy.check(proc)
    assert ident is None
    assert why is not None and "exited" in why and "namespace" not in why


def test_kill_keeps_namespace_wording_for_a_live_pid_it_cannot_see() -> None:
    import os

    proc = make_process(0, os.getpid(), host_visible=False)
    _, why = KillPolicy(is_root=lambda: True).check(proc)
    assert why is not None and "namespace" in why


def test_snapshot_text_says_exited() -> None:
    pid = exited_pid()
    gone = make_process(0, pid, host_visible=False, user=None, cmdline=None, name=None)
    snap = replace(make_snapshot(processes=(gone,)), source="nvml")
    assert exited_pids(snap) == {pid}
    text = render(snap, exited=exited_pids(snap))
    line = next(ln for ln in text.splitlines() if str(pid) in ln)
    assert "exited" in line and "namespace" not in line


def test_snapshot_text_of_simulated_pids_is_unchanged() -> None:
    gone = make_process(0, exited_pid(), host_visible=False, user=None, cmdline=None, name=None)
    snap = replace(make_snapshot(processes=(gone,)), source="demo")
    assert exited_pids(snap) == frozenset()
    assert "another PID namespace" in render(snap, exited=exited_pids(snap))
