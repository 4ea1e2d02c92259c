"""The host side of a real poll: CPU, memory and load, and who each GPU process is.

NVML only knows PIDs; psutil turns them into users and command lines. psutil
Process objects are cached per PID so `cpu_percent` has a previous sample to
compare with (a fresh object reports None, not psutil's meaningless 0.0), and
evicted when the PID leaves the GPU. A process psutil cannot see or read is
kept with `host_visible=False`; nothing here raises for one bad PID.
CPU percentages are computed from this sampler's own cpu_times, so another
user of psutil.cpu_percent() in the same program cannot disturb them.

psutil is imported where it is used, not with this module: the dashboard imports
this module for the details dialog, the tree view and a hidden process's reason,
and on Linux its polls read /proc (sources/host/procfs.py), so a dashboard nobody
opens a dialog in never pays psutil's ~1.1 MiB and 15-25 ms.
"""

from __future__ import annotations

import dataclasses
import functools
import socket
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from gputui.core.textsafe import visible
from gputui.model.record import replace
from gputui.model.snapshot import GpuProcess, HostSnapshot
from gputui.sources.host import containers
from gputui.sources.host.procfs import CONTAINER_NOTICE as CONTAINER_NOTICE
from gputui.sources.host.procfs import INVISIBLE, MIN_INTERVAL_S, cpu_percents

if TYPE_CHECKING:
    import psutil

T = TypeVar("T")


def _or_none(read: Callable[[], T]) -> T | None:
    """A psutil read that may be denied: None then. A vanished process still raises."""
    import psutil

    try:
        return read()
    except psutil.AccessDenied:
        return None


def why_not_visible(pid: int) -> str:
    """Why psutil cannot describe `pid` from the host's PID namespace: exited, or no permission.

    Only meaningful where gputui shares the host's PID namespace (NVML reports
    host PIDs); in a container every PID is simply another namespace's. On Linux
    without psutil (sources/host/procfs.py): the dashboard asks this for the highlighted
    row, which is no dialog that needs psutil.
    """
    exists: bool
    try:
        if sys.platform.startswith("linux"):
            from gputui.sources.host.procfs import pid_exists

            exists = pid_exists(pid)
        else:
            import psutil

            exists = psutil.pid_exists(pid)
    except (OSError, ValueError, OverflowError):
        exists = False
    if not exists:
        return "no: it has exited (No Such Process), though NVML still lists it"
    return "no: no permission to read it (hidepid, or another user's process)"


class HostSampler:
    def __init__(
        self,
        *,
        proc_root: Path = containers.PROC,
        root: Path = Path("/"),
        hostname: str | None = None,
    ) -> None:
        self._proc_root = proc_root
        self._root = root
        self._hostname = visible(hostname or socket.gethostname())
        self._procs: dict[int, psutil.Process] = {}
        self._static: dict[int, tuple[float | None, dict[str, Any]]] = {}
        self._notices: list[str] = []
        self._in_container: bool | None = None
        self._last_times: tuple[Any, list[Any]] | None = None
        self._last_at = 0.0
        self._prime()

    def _prime(self) -> None:
        import psutil

        try:
            self._last_times = (psutil.cpu_times(), psutil.cpu_times(percpu=True))
        except (OSError, RuntimeError):
            self._last_times = None
        self._last_at = time.monotonic()

    def sample(self) -> HostSnapshot:
        import psutil

        cpu: float | None = None
        per_cpu: tuple[float, ...] = ()
        now = time.monotonic()
        if now - self._last_at >= MIN_INTERVAL_S:
            previous = self._last_times
            self._prime()
            cpu, per_cpu = cpu_percents(previous, self._last_times)
        load: tuple[float, float, float] | None
        try:
            load = psutil.getloadavg()
        except (OSError, AttributeError):
            load = None
        mem_total = mem_used = mem_avail = swap_total = swap_used = None
        try:
            vm = psutil.virtual_memory()
            mem_total, mem_used, mem_avail = vm.total, vm.used, vm.available
        except (OSError, RuntimeError):
            pass
        try:
            sw = psutil.swap_memory()
            swap_total, swap_used = sw.total, sw.used
        except (OSError, RuntimeError):
            pass
        return HostSnapshot(
            hostname=self._hostname,
            cpu_percent=cpu,
            per_cpu_percent=per_cpu,
            load_average=load,
            memory_total=mem_total,
            memory_used=mem_used,
            memory_available=mem_avail,
            swap_total=swap_total,
            swap_used=swap_used,
        )

    def enrich(self, processes: Sequence[GpuProcess]) -> tuple[GpuProcess, ...]:
        """Fill each process's host fields; one PID on two GPUs is read once."""
        now = time.time()
        found: dict[int, dict[str, Any] | None] = {}
        for p in processes:
            if p.pid not in found:
                found[p.pid] = self._read(p.pid, now)
        for pid in list(self._procs):
            if pid not in found:
                self._forget(pid)
        # Every PID missing from our /proc (not just one that exited meanwhile) means we
        # live in another PID namespace; a container marker says why.
        if (
            found
            and CONTAINER_NOTICE not in self._notices
            and all(
                info is None and not containers.pid_visible(pid, self._proc_root)
                for pid, info in found.items()
            )
        ):
            if self._in_container is None:
                self._in_container = containers.running_in_container(self._proc_root, self._root)
            if self._in_container:
                self._notices.append(CONTAINER_NOTICE)
        out = []
        for p in processes:
            info = found[p.pid]
            if info is None:
                out.append(replace(p, **INVISIBLE))
            else:
                out.append(replace(p, **info))
        return tuple(out)

    def notices(self) -> tuple[str, ...]:
        """Every remark so far, each once; the same tuple on later calls (views de-duplicate)."""
        return tuple(self._notices)

    def _read(self, pid: int, now: float) -> dict[str, Any] | None:
        """Per poll only CPU and RSS are read; identity fields are cached per PID.

        `Process.is_running()` builds a second Process to compare, and user,
        command line and cgroup never change for a live process, so re-reading
        them on every poll would be most of the host cost. A reused PID is
        caught by its create time, which `oneshot()` reads from the same
        /proc/PID/stat as the CPU times.
        """
        import psutil

        cached = self._procs.get(pid)
        for attempt in (0, 1):
            proc = cached if attempt == 0 and cached is not None else None
            fresh = proc is None
            try:
                if proc is None:
                    proc = psutil.Process(pid)
                with proc.oneshot():
                    created = _or_none(proc.create_time)
                    if _or_none(proc.status) == psutil.STATUS_ZOMBIE:
                        # exited, not yet reaped: newer psutil raises ZombieProcess on
                        # its reads, 5.9.0 still answers them; gone either way
                        raise psutil.ZombieProcess(pid)
                    static = self._static.get(pid)
                    if not fresh and (static is None or static[0] != created):
                        continue  # the PID was reused: start over with a new Process
                    cpu = _or_none(functools.partial(proc.cpu_percent, interval=None))
                    mem = _or_none(proc.memory_info)
                    if static is None or static[0] != created:
                        static = (created, self._identity(proc))
            except (psutil.Error, OSError, ValueError):
                # Gone, zombie (a NoSuchProcess), denied outright, or a PID psutil rejects
                # (NVML can report 0): listed without host fields, never an exception.
                self._forget(pid)
                return None
            ident = static[1]
            if (
                ident["user"] is None
                and ident["name"] is None
                and ident["cmdline"] is None
                and mem is None
            ):
                self._forget(pid)
                return None  # nothing readable: as good as invisible
            self._procs[pid] = proc
            self._static[pid] = static
            return {
                **ident,
                "cpu_percent": None if fresh or cpu is None else round(cpu, 1),
                "rss": mem.rss if mem is not None else None,
                "running_s": max(0.0, now - created) if created is not None else None,
                "host_visible": True,
            }
        self._forget(pid)
        return None

    def _identity(self, proc: psutil.Process) -> dict[str, Any]:
        """Who the process is. Names and arguments are chosen by whoever started it (another
        user's `ESC ] 0 ; ... BEL` would retitle our terminal): made visible here, once."""
        pid = proc.pid
        cmdline = _or_none(proc.cmdline)
        container = containers.container_of(pid, self._proc_root, self._root)
        user = _or_none(proc.username)
        name = _or_none(proc.name)
        return {
            "user": None if user is None else visible(user),
            "name": None if name is None else visible(name),
            "cmdline": tuple(visible(arg) for arg in cmdline) if cmdline else None,
            "container": container,
            "container_pid": (
                containers.namespace_pid(pid, self._proc_root) if container else None
            ),
        }

    def _forget(self, pid: int) -> None:
        self._procs.pop(pid, None)
        self._static.pop(pid, None)


# -- read on demand (the details dialog, the tree view), never on every poll ----------------

# What a GPU user looks for in a process's environment: which devices it may see, how its
# framework allocates, and where it sits in a distributed job. Nothing else is read out:
# an environment holds tokens and passwords, so names that look like one are skipped even
# under an allowed prefix (TF_VAR_* is Terraform's, and often a secret).
ENV_NAMES = frozenset(
    {
        "CUDA_VISIBLE_DEVICES",
        "NVIDIA_VISIBLE_DEVICES",
        "CUDA_DEVICE_ORDER",
        "CUDA_LAUNCH_BLOCKING",
        "CUDA_MPS_PIPE_DIRECTORY",
        "PYTORCH_CUDA_ALLOC_CONF",
        "PYTORCH_ALLOC_CONF",
        "LOCAL_RANK",
        "RANK",
        "WORLD_SIZE",
        "LOCAL_WORLD_SIZE",
        "MASTER_ADDR",
        "MASTER_PORT",
        "OMP_NUM_THREADS",
        "SLURM_JOB_ID",
        "SLURM_JOB_NAME",
        "SLURM_PROCID",
        "SLURM_LOCALID",
        "SLURM_STEP_GPUS",
        "TF_CONFIG",  # a distributed TensorFlow job's cluster spec
    }
)
# TensorFlow's own variables by their prefixes, not all of TF_*: Terraform uses TF_ too
# (TF_CLI_CONFIG_FILE, TF_LOG, TF_DATA_DIR... are no GPU matter).
TF_PREFIXES = (
    "TF_CPP_",
    "TF_GPU_",
    "TF_FORCE_GPU",
    "TF_XLA",
    "TF_ENABLE_",
    "TF_DISABLE_",
    "TF_CUDNN",
    "TF_CUDA",
    "TF_DETERMINISTIC",
    "TF_NUM_",
    "TF_MIN_GPU",
    "TF_USE_",
    "TF_AUTOTUNE",
)
ENV_PREFIXES = ("NCCL_", *TF_PREFIXES, "JAX_", "XLA_", "TORCH_", "HIP_VISIBLE", "ROCR_VISIBLE")
_ENV_SECRET = ("TOKEN", "SECRET", "PASSW", "KEY", "CRED", "AUTH", "TF_VAR_")
ENV_VALUE_MAX = 300


def gpu_environment(environ: dict[str, str]) -> dict[str, str]:
    """The GPU-related variables of an environment, sorted, values bounded and made visible."""
    out: dict[str, str] = {}
    for name in sorted(environ):
        upper = name.upper()
        if not (name in ENV_NAMES or upper.startswith(ENV_PREFIXES)):
            continue
        if any(word in upper for word in _ENV_SECRET):
            continue
        value = environ[name]
        if len(value) > ENV_VALUE_MAX:
            value = value[: ENV_VALUE_MAX - 1] + "…"
        out[visible(name)] = visible(value)
    return out


@dataclasses.dataclass(frozen=True, slots=True)
class ProcessExtras:
    """What the details dialog reads once when it opens: too costly or private for every poll."""

    environment: dict[str, str] | None = None  # None: not read, `environment_note` says why
    environment_note: str | None = None
    container: containers.ContainerRef | None = None


def read_extras(
    pid: int,
    started_at: float | None,
    *,
    proc_root: Path = containers.PROC,
    root: Path = Path("/"),
    tolerance_s: float = 2.0,
) -> ProcessExtras:
    """The environment and container of the process listed as `pid`, started at `started_at`.

    Read only if `pid` is still that process (its start time matches): a reused PID
    would show a stranger's environment. psutil refuses other users' processes to
    non-root users; that is said, not worked around. Nothing here is logged or kept.
    """
    import psutil

    try:
        proc = psutil.Process(pid)
        created = proc.create_time()
    except (psutil.Error, OSError, ValueError):
        return ProcessExtras(environment_note="not read: the process has exited")
    if started_at is not None and abs(created - started_at) > tolerance_s:
        return ProcessExtras(environment_note="not read: the PID now names another process")
    ref = containers.container_ref_of(pid, proc_root, root)
    try:
        environ = proc.environ()
    except psutil.AccessDenied:
        return ProcessExtras(
            environment_note="not read: no permission (another user's process)", container=ref
        )
    except (psutil.Error, OSError, ValueError):
        return ProcessExtras(environment_note="not read: the process has exited", container=ref)
    return ProcessExtras(environment=gpu_environment(environ), container=ref)


Ancestors = tuple[tuple[int, str], ...]  # (pid, name), the parent first
_MAX_DEPTH = 32


def read_ancestors(pids: Sequence[int]) -> dict[int, Ancestors]:
    """Each PID's parents up to (not including) init, for the process tree view.

    Read only while the tree is shown. A PID psutil cannot see gets no entry;
    a parent it cannot read ends that chain.
    """
    import psutil

    memo: dict[int, tuple[int, str] | None] = {}

    def parent_of(pid: int) -> tuple[int, str] | None:
        """(parent pid, parent name), or None at the top or where unreadable."""
        if pid in memo:
            return memo[pid]
        result: tuple[int, str] | None = None
        try:
            ppid = psutil.Process(pid).ppid()
            if ppid > 1:
                name = _or_none(psutil.Process(ppid).name)
                result = (ppid, visible(name) if name else "?")
        except (psutil.Error, OSError, ValueError):
            result = None
        memo[pid] = result
        return result

    out: dict[int, Ancestors] = {}
    for pid in pids:
        if pid <= 0:
            continue
        try:
            if not psutil.pid_exists(pid):
                continue
        except (OSError, ValueError):
            continue
        chain: list[tuple[int, str]] = []
        at = pid
        while len(chain) < _MAX_DEPTH:
            parent = parent_of(at)
            if parent is None or parent[0] == pid or any(p == parent[0] for p, _ in chain):
                break
            chain.append(parent)
            at = parent[0]
        out[pid] = tuple(chain)
    return out
