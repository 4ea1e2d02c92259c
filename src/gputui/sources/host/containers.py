"""Which container a host PID lives in, from /proc/PID/cgroup and /proc/PID/status.

NVML reports host PIDs. When gputui runs on the host, a GPU process inside a
container is still visible in /proc, and its cgroup path names the container
runtime and id (and, under Kubernetes, the pod's UID); the NSpid line of its
status file gives the PID the container itself sees. Every function takes
`proc_root` so tests can use a fake tree.

Names are not in cgroup paths. Where gputui may read the runtime's own state
(usually as root), they come from there, once per process: Docker's
`containers/<id>/config.v2.json` ("Name"), and for Kubernetes the pod name and
namespace in the OCI bundle annotations that containerd
(`io.kubernetes.cri.sandbox-*`) and cri-o (`io.kubernetes.pod.*`) write.
Those files are the runtime's, but the names in them were chosen by whoever
started the container: made visible before use.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from gputui.core.textsafe import visible

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
# A substring every pattern above needs: most processes are on the host, and one `in` test
# per marker is ~50x cheaper than running the patterns over every cgroup line.
_MARKERS = ("kubepods", "docker", "containerd", "crio", "libpod", "/lxc")
_RUNTIME_NAMES = ("docker", "docker", "containerd", "cri-o", "podman", "podman")
# cgroupfs Kubernetes paths put the bare container id right under the pod's directory.
_POD_CHILD = re.compile(r"pod[0-9a-f_-]{36}(?:\.slice)?/" + _HEX64 + r"(?=/|$)")

SHORT_ID = 12
_STATE_MAX_BYTES = 1 << 20  # a runtime's config file; anything larger is not one


@dataclass(frozen=True, slots=True)
class ContainerRef:
    """What a cgroup path says about a process's container; names are looked up apart."""

    runtime: str  # "docker", "containerd", "cri-o", "podman", "lxc" or "kubernetes"
    id: str | None = None  # the full id (64 hex digits; the lxc name for lxc)
    pod_uid: str | None = None  # Kubernetes pod UID, dashed
    name: str | None = None  # the container's name, where the runtime's state says it
    pod: str | None = None  # "namespace/pod name", where the runtime's state says it

    @property
    def label(self) -> str:
        """The short form the process table shows: a name where known, else an id."""
        if self.pod is not None:
            return self.pod
        if self.pod_uid is not None:
            return "k8s:pod " + self.pod_uid[:8]
        if self.name is not None:
            return self.name
        if self.runtime == "lxc":
            return "lxc:" + (self.id or "")
        return (self.id or "")[:SHORT_ID]


def container_ref_from_cgroup(text: str) -> ContainerRef | None:
    """The container named by the contents of a cgroup file, or None on the host.

    The innermost match wins, for nested runtimes.
    """
    if not any(marker in text for marker in _MARKERS):
        return None
    for line in text.splitlines():
        path = line.split(":", 2)[-1]
        pod = _POD.search(path)
        best: tuple[int, str, str] | None = None
        for pattern, runtime in zip(_RUNTIMES, _RUNTIME_NAMES, strict=True):
            for m in pattern.finditer(path):
                if best is None or m.start() > best[0]:
                    best = (m.start(), m.group(1), runtime)
        if pod:
            uid = pod.group(1).replace("_", "-")
            if best is None:
                child = _POD_CHILD.search(path)
                best = (0, child.group(1), "kubernetes") if child else None
            return ContainerRef(
                runtime=best[2] if best else "kubernetes",
                id=best[1] if best else None,
                pod_uid=uid,
            )
        if best is not None:
            return ContainerRef(runtime=best[2], id=best[1])
        lxc = _LXC.search(path)
        if lxc:
            return ContainerRef(runtime="lxc", id=visible(lxc.group(1)))  # lxc's chosen name
    return None


def _json(path: Path) -> object:
    import json  # only where a container's runtime state is read: not on the snapshot path

    try:
        with path.open("rb") as f:
            data = f.read(_STATE_MAX_BYTES + 1)
    except OSError:  # absent, or not ours to read
        return None
    if len(data) > _STATE_MAX_BYTES:
        return None
    try:
        return json.loads(data)
    except (ValueError, RecursionError):
        return None


def _text(value: object, limit: int = 253) -> str | None:
    """A name from a runtime file: a string, bounded (253: a DNS name), made visible."""
    if not isinstance(value, str) or not value:
        return None
    return visible(value[:limit])


def _annotations(config: object) -> dict[str, object]:
    if isinstance(config, dict):
        notes = config.get("annotations")
        if isinstance(notes, dict):
            return notes
    return {}


def with_names(ref: ContainerRef, root: Path = Path("/")) -> ContainerRef:
    """`ref` with the container and pod names the runtime's state files give, where readable."""
    cid = ref.id
    if cid is None or ref.runtime == "lxc":
        return ref
    name = pod = None
    if ref.runtime == "docker":
        config = _json(root / "var/lib/docker/containers" / cid / "config.v2.json")
        if isinstance(config, dict):
            raw = _text(config.get("Name"))
            name = raw.lstrip("/") if raw else None
    bundles = (
        root / "run/containerd/io.containerd.runtime.v2.task/k8s.io" / cid / "config.json",
        root / "run/containers/storage/overlay-containers" / cid / "userdata/config.json",
    )
    for bundle in bundles if ref.runtime != "docker" else ():
        notes = _annotations(_json(bundle))
        if not notes:
            continue
        ns = _text(
            notes.get("io.kubernetes.cri.sandbox-namespace")
            or notes.get("io.kubernetes.pod.namespace")
        )
        pod_name = _text(
            notes.get("io.kubernetes.cri.sandbox-name") or notes.get("io.kubernetes.pod.name")
        )
        name = _text(
            notes.get("io.kubernetes.cri.container-name")
            or notes.get("io.kubernetes.container.name")
        )
        if pod_name:
            pod = f"{ns}/{pod_name}" if ns else pod_name
        break
    if name is None and pod is None:
        return ref
    return ContainerRef(ref.runtime, ref.id, ref.pod_uid, name, pod)


def container_ref_of(
    pid: int, proc_root: Path = PROC, root: Path | None = None
) -> ContainerRef | None:
    """The container of `pid`; with `root`, its names too where the runtime's files say them."""
    text = _read(proc_root / str(pid) / "cgroup")
    ref = container_ref_from_cgroup(text) if text else None
    if ref is not None and root is not None:
        ref = with_names(ref, root)
    return ref


def container_from_cgroup(text: str) -> str | None:
    """A short container label from the contents of a cgroup file, or None on the host.

    Docker, containerd, cri-o and podman give a 12-character id (what `docker ps`
    shows); Kubernetes pods give "k8s:pod <uid prefix>" (what `kubectl get pod
    -o yaml` shows) until the runtime's state names the pod (`with_names`).
    """
    ref = container_ref_from_cgroup(text)
    return ref.label if ref is not None else None


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:  # gone, no permission, or not Linux
        return None


def container_of(pid: int, proc_root: Path = PROC, root: Path | None = None) -> str | None:
    ref = container_ref_of(pid, proc_root, root)
    return ref.label if ref is not None else None


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
