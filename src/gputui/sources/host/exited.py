"""Which listed processes have exited: NVML lists a process for a while after it exits.

Asked of the host by whoever renders a snapshot (the `snapshot` command), so the
table can say "exited" rather than "another PID namespace", and the renderer reads
no /proc itself.
"""

from __future__ import annotations

import sys

from gputui.model.snapshot import Snapshot


def exited_pids(snapshot: Snapshot) -> frozenset[int]:
    """Listed PIDs the host cannot see because they no longer exist (NVML lists a process
    for a while after it exits). Tested before "another PID namespace": an exited process
    is not in any. Not for simulated PIDs (made up) or from inside a container (every
    host PID is missing there)."""
    from gputui.sources.host.procfs import CONTAINER_NOTICE

    hidden = {p.pid for p in snapshot.processes if not p.host_visible}
    if not hidden or snapshot.simulated or CONTAINER_NOTICE in snapshot.notices:
        return frozenset()
    return frozenset(pid for pid in hidden if not _pid_exists(pid))


def _pid_exists(pid: int) -> bool:
    try:
        if sys.platform.startswith("linux"):
            from gputui.sources.host.procfs import pid_exists

            return pid_exists(pid)
        import psutil

        return bool(psutil.pid_exists(pid))
    except (OSError, ValueError, OverflowError):
        return True  # unknown: keep the namespace wording, never a confident "exited"
