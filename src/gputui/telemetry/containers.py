"""Which container a host PID lives in, from /proc/PID/cgroup and /proc/PID/status.

NVML reports host PIDs. When gputui runs on the host, a GPU process inside a
container is still visible in /proc, and its cgroup path names the container
runtime and id; the NSpid line of its status file gives the PID the container
itself sees. Every function takes `proc_root` so tests can use a fake tree.
"""

from __future__ import annotations

import re
from pathlib import Path

from gputui.textsafe import visible

PROC = Path("/proc")

_HEX64 = r"([0-9a-f]{64})"
_POD = re.compile(
    r"kubepods.*?pod([0-9a-f]{8}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{12})"
)
# Runtime-specific leaf names; conmon scopes (podman's and cri-o's monitors) are not containers.
_RUNTIMES = (
    re.compile(r"docker-" + _HEX64 + r"\.scope"),
    re.compile(r"/docker/" + _HEX64 + r"(?=/|$)"),
    re.compile(r"cri-containerd-" + _HEX64 + r"\.scope"),
    re.compile(r"crio-" + _HEX64 + r"(?:\.scope)?(?=/|$)"),
    re.compile(r"libpod-" + _HEX64 + r"\.scope"),
    re.compile(r"/libpod_parent/libpod-" + _HEX64),
)
_LXC = re.compile(r"/lxc(?:\.payload)?[./]([^/]+)")

SHORT_ID = 12


def container_from_cgroup(text: str) -> str | None:
    """A short container label from the contents of a cgroup file, or None on the host.

    Docker, containerd, cri-o and podman give a 12-character id (what `docker ps`
    shows); Kubernetes pods give "k8s:pod <uid prefix>", because the pod name is
    not in the cgroup path and the uid is what `kubectl get pod -o yaml` shows.
    The innermost match wins, for nested runtimes.
    """
    for line in text.splitlines():
        path = line.split(":", 2)[-1]
        pod = _POD.search(path)
        if pod:
            return "k8s:pod " + pod.group(1).replace("_", "-")[:8]
        best: tuple[int, str] | None = None
        for pattern in _RUNTIMES:
            for m in pattern.finditer(path):
                if best is None or m.start() > best[0]:
                    best = (m.start(), m.group(1)[:SHORT_ID])
        if best is not None:
            return best[1]
        lxc = _LXC.search(path)
        if lxc:
            return "lxc:" + visible(lxc.group(1))  # a name anyone who runs lxc chose
    return None


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:  # gone, no permission, or not Linux
        return None


def container_of(pid: int, proc_root: Path = PROC) -> str | None:
    text = _read(proc_root / str(pid) / "cgroup")
    return container_from_cgroup(text) if text else None


def namespace_pid(pid: int, proc_root: Path = PROC) -> int | None:
    """The PID the process has in its innermost PID namespace, when that differs from ours."""
    text = _read(proc_root / str(pid) / "status")
    if not text:
        return None
    for line in text.splitlines():
        if line.startswith("NSpid:"):
            ids = line.split()[1:]
            if len(ids) >= 2 and ids[-1].isdigit():
                return int(ids[-1])
            return None
    return None


def pid_visible(pid: int, proc_root: Path = PROC) -> bool:
    return (proc_root / str(pid)).is_dir()


def running_in_container(proc_root: Path = PROC, root: Path = Path("/")) -> bool:
    """Whether gputui itself runs in a container (not whether it shares the host PID namespace)."""
    if (root / ".dockerenv").exists() or (root / "run" / ".containerenv").exists():
        return True
    for who in ("1", "self"):
        text = _read(proc_root / who / "cgroup")
        if text and container_from_cgroup(text) is not None:
            return True
    return False
