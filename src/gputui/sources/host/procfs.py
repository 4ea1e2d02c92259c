"""The host side of an NVML poll on Linux, read straight from /proc, without psutil.

Why not psutil: `gputui snapshot` runs once and exits (people run it in loops
and scripts), and importing psutil costs 15-25 ms of CPU, a third to a half of
the whole pynvml floor (`import pynvml; nvmlInit()`); and in the dashboard's
poll thread psutil spent ~0.1 ms per process per poll (two files, a
`oneshot()` context, `cpu_count()` for every `cpu_percent()`), where one read
of /proc/PID/stat says all that changes. sources/host/source.py (psutil) remains
for other systems; the details dialog and the tree view still use psutil, on
demand.

What is read:
- every poll, per PID (one PID on two GPUs is read once): /proc/PID/stat:
  CPU ticks (user + system), start time, resident set size. A start time that
  differs from last poll's is another process under a reused PID;
- once per (PID, start time), the identity: the name (stat), /proc/PID/status
  (the real uid, turned into a user name through `pwd` once per uid: an NSS
  lookup can be an LDAP round trip; NSpid), /proc/PID/cmdline and
  /proc/PID/cgroup (the container, sources/host/containers.py);
- per poll for the host: /proc/stat (CPU times), /proc/meminfo, the load.
Each value follows psutil's definition (tests/sources/host/test_procfs_host.py
compares them for every PID of the machine): a 15-character name is extended
from the command line, a NUL-less command line is split at spaces, a uid
without a passwd entry is shown as its number, a zombie is not visible, CPU %
is process CPU time over wall time since the previous poll (100 = one core),
None at the first sight of a process (a one-shot has only that). Memory `used`
is total - available (psutil >= 6's and `free`'s definition); the host CPU %
is measured from the previous sample, None when that was under 50 ms ago.
Files are read with os.open/os.read: see `_read_bytes`.
"""

from __future__ import annotations

import os
import sys
import time
from collections import namedtuple
from collections.abc import Sequence

from gputui.core.textsafe import visible
from gputui.model.record import replace
from gputui.model.snapshot import GpuProcess, HostSnapshot

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (see sources/base.py)
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

# A substring each of sources/host/containers.py's cgroup patterns needs (its _MARKERS; a test
# keeps the two equal): most processes are on the host, and containers.py (its patterns,
# a dataclass) is imported only for a cgroup that may name a container.
CGROUP_MARKERS = ("kubepods", "docker", "containerd", "crio", "libpod", "/lxc")

CONTAINER_NOTICE = (
    "gputui runs inside a container without the host PID namespace: "
    "GPU processes cannot be attributed to users or commands"
)
MIN_INTERVAL_S = 0.05  # below this, CPU deltas are noise

# The host fields of a process psutil cannot see or read (listed, not described).
INVISIBLE: dict[str, Any] = {
    "user": None,
    "name": None,
    "cmdline": None,
    "cpu_percent": None,
    "rss": None,
    "running_s": None,
    "container": None,
    "container_pid": None,
    "host_visible": False,
}

_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
_PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")
_TASK_COMM_LEN = 15  # the kernel keeps this many characters of a process name
_ENCODING = sys.getfilesystemencoding()  # how psutil decodes /proc text
_ERRORS = sys.getfilesystemencodeerrors()


# System CPU seconds, psutil's `scputimes` fields on Linux (for `percent`).
CpuTimes = namedtuple(
    "CpuTimes",
    "user nice system idle iowait irq softirq steal guest guest_nice",
    defaults=(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0),
)


def busy_and_total(times: Any) -> tuple[float, float]:
    total = sum(times)
    # On Linux, user/nice already include guest/guest_nice time.
    total -= getattr(times, "guest", 0.0) + getattr(times, "guest_nice", 0.0)
    idle = times.idle + getattr(times, "iowait", 0.0)
    return total - idle, total


def percent(old: Any, new: Any) -> float:
    """Busy share of the CPU time between two samples, 0-100, one decimal."""
    b0, t0 = busy_and_total(old)
    b1, t1 = busy_and_total(new)
    dt = t1 - t0
    if dt <= 0:
        return 0.0
    return round(min(100.0, max(0.0, 100.0 * (b1 - b0) / dt)), 1)


def cpu_percents(
    previous: tuple[Any, Sequence[Any]] | None, now: tuple[Any, Sequence[Any]] | None
) -> tuple[float | None, tuple[float, ...]]:
    """Whole-host and per-CPU busy percent between two (total, per-CPU) readings: unknown
    when either is missing, no per-CPU figures when the CPU count changed between them."""
    if previous is None or now is None:
        return None, ()
    cpu = percent(previous[0], now[0])
    if len(now[1]) != len(previous[1]):
        return cpu, ()
    return cpu, tuple(percent(a, b) for a, b in zip(previous[1], now[1], strict=True))


_READ_SIZE = 1 << 16


def _read_bytes(path: str) -> bytes:
    """A whole /proc file in as few system calls as the kernel allows.

    `open()` adds an fstat, an lseek and a buffer to each file, and `read()` a
    last empty read; at ~13 us per system call (a VM) and four files per process,
    that doubled the host cost. /proc fills a read up to its size unless the file
    ends first, so a short read is the end.
    """
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        data = os.read(fd, _READ_SIZE)
        if len(data) < _READ_SIZE:
            return data
        chunks = [data]
        while chunk := os.read(fd, _READ_SIZE):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _line(data: bytes, key: bytes) -> list[bytes]:
    """The fields after `key` (b"\\nUid:") in a status file; [] when there is no such line."""
    start = data.find(key)
    if start < 0:
        return []
    start += len(key)
    end = data.find(b"\n", start)
    return data[start : end if end >= 0 else len(data)].split()


def pid_exists(pid: int, proc_root: str = "/proc") -> bool:
    """psutil.pid_exists on Linux, without importing psutil: the dashboard asks it for a
    highlighted process without host details (sources/host/source.py `why_not_visible`).

    Signal 0 tells a live PID (EPERM: someone else's, still live) from a gone one even
    where hidepid hides it from /proc; a thread's ID is not a process (its Tgid differs).
    PID 0 is never listed in /proc: not a process to us, as for psutil.
    """
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    except (OverflowError, OSError):
        return False  # beyond pid_t (psutil raises there; "exited" is the honest answer)
    try:
        tgid = _line(_read_bytes(f"{proc_root}/{pid}/status"), b"\nTgid:")
        if tgid and tgid[0].isdigit():
            return int(tgid[0]) == pid
    except OSError:
        pass
    try:
        return str(pid) in os.listdir(proc_root)  # status unreadable: psutil's fallback
    except OSError:
        return False


class _Gone(Exception):
    """The PID is not (or no longer) a process we can see."""


class _Known:
    """A process seen last poll: its start (ticks since boot: a reused PID has another),
    CPU ticks then and when, and who it is."""

    __slots__ = ("start", "ticks", "at", "ident")

    def __init__(self, start: int | None, ticks: int | None, at: float, ident: dict[str, Any]):
        self.start = start
        self.ticks = ticks
        self.at = at
        self.ident = ident


def _parse_stat(
    stat: bytes | None,
) -> tuple[str | None, bytes | None, int | None, int | None, int | None]:
    """(name, state, utime + stime ticks, start ticks, RSS bytes) of /proc/PID/stat."""
    if stat is None:
        return None, None, None, None, None
    close = stat.rindex(b")")
    name = stat[stat.index(b"(") + 1 : close].decode(_ENCODING, _ERRORS)
    fields = stat[close + 2 :].split()
    # fields[0] is stat's 3rd field (state): utime 14, stime 15, starttime 22, rss 24
    ticks = int(fields[11]) + int(fields[12])
    return name, fields[0], ticks, int(fields[19]), int(fields[21]) * _PAGE_SIZE


class ProcfsHost:
    """The `HostSampler` interface of sources/nvml/source.py for one poll, from /proc (see above)."""

    def __init__(self, *, proc_root: str | Path = "/proc", root: str | Path = "/") -> None:
        self._proc = os.fspath(proc_root)
        self._root_dir = os.fspath(root)
        self._hostname = visible(os.uname().nodename)
        self._users: dict[int, str] = {}
        self._known: dict[int, _Known] = {}
        self._notices: list[str] = []
        self._in_container: bool | None = None
        self._boot_time: float | None = None
        self._primed = self._cpu_times()
        self._primed_at = time.monotonic()

    # -- the host --------------------------------------------------------------------
    def _stat_lines(self) -> list[bytes]:
        try:
            return _read_bytes(f"{self._proc}/stat").splitlines()
        except OSError:
            return []

    def _cpu_times(self) -> tuple[CpuTimes, list[CpuTimes]] | None:
        lines = self._stat_lines()
        total: CpuTimes | None = None
        per_cpu: list[CpuTimes] = []
        for line in lines:
            if line.startswith(b"cpu"):
                values = [float(x) / _CLOCK_TICKS for x in line.split()[1:11]]
                times = CpuTimes(*values)
                if line.startswith(b"cpu "):
                    total = times
                else:
                    per_cpu.append(times)
            elif line.startswith(b"btime") and self._boot_time is None:
                self._boot_time = float(line.split()[1])
        return None if total is None else (total, per_cpu)

    def sample(self) -> HostSnapshot:
        cpu: float | None = None
        per_cpu: tuple[float, ...] = ()
        mono = time.monotonic()
        if mono - self._primed_at >= MIN_INTERVAL_S:  # else too short to mean anything
            previous, now = self._primed, self._cpu_times()
            self._primed, self._primed_at = now, mono
            cpu, per_cpu = cpu_percents(previous, now)
        try:
            load: tuple[float, float, float] | None = os.getloadavg()
        except OSError:
            load = None
        mem = self._meminfo()
        total, avail = mem.get(b"MemTotal:"), mem.get(b"MemAvailable:")
        swap_total, swap_free = mem.get(b"SwapTotal:"), mem.get(b"SwapFree:")
        if avail is not None and total is not None and avail > total:
            avail = mem.get(b"MemFree:", avail)  # distorted inside LXC: psutil does the same
        return HostSnapshot(
            hostname=self._hostname,
            cpu_percent=cpu,
            per_cpu_percent=per_cpu,
            load_average=load,
            memory_total=total,
            memory_used=None if total is None or avail is None else total - avail,
            memory_available=avail,
            swap_total=swap_total,
            swap_used=None if swap_total is None or swap_free is None else swap_total - swap_free,
        )

    def _meminfo(self) -> dict[bytes, int]:
        try:
            data = _read_bytes(f"{self._proc}/meminfo")
        except OSError:
            return {}
        out: dict[bytes, int] = {}
        for line in data.splitlines():
            parts = line.split()
            if len(parts) >= 2 and parts[1].isdigit():
                out[parts[0]] = int(parts[1]) * 1024  # kB
        return out

    # -- the processes ---------------------------------------------------------------
    def enrich(self, processes: Sequence[GpuProcess]) -> tuple[GpuProcess, ...]:
        """Fill each process's host fields; one PID on two GPUs is read once."""
        now, mono = time.time(), time.monotonic()
        found: dict[int, dict[str, Any] | None] = {}
        for p in processes:
            if p.pid not in found:
                found[p.pid] = self._read(p.pid, now, mono)
        for pid in [pid for pid in self._known if pid not in found]:
            del self._known[pid]  # left the GPU (or exited): a later PID is someone else
        if found and CONTAINER_NOTICE not in self._notices and not any(found.values()):
            self._check_container(found)
        return tuple(replace(p, **(found[p.pid] or INVISIBLE)) for p in processes)

    def notices(self) -> tuple[str, ...]:
        """Every remark so far, each once; the same tuple on later calls (views de-duplicate)."""
        return tuple(self._notices)

    def _check_container(self, pids: dict[int, Any]) -> None:
        """Not one PID readable: if none is even in our /proc, we live in another PID
        namespace; a container marker says why (the notice)."""
        from pathlib import Path

        from gputui.sources.host import containers

        proc_root, root = Path(self._proc), Path(self._root_dir)
        if any(containers.pid_visible(pid, proc_root) for pid in pids):
            return
        if self._in_container is None:
            self._in_container = containers.running_in_container(proc_root, root)
        if self._in_container:
            self._notices.append(CONTAINER_NOTICE)

    def _read(self, pid: int, now: float, mono: float) -> dict[str, Any] | None:
        """One process: /proc/PID/stat every poll; the rest once per (PID, start time)."""
        if pid <= 0:
            self._known.pop(pid, None)
            return None  # NVML can report 0; psutil has no such process either
        base = f"{self._proc}/{pid}"
        try:
            stat = _read_bytes(f"{base}/stat")
        except PermissionError:
            stat = None
        except OSError:
            self._known.pop(pid, None)
            return None  # gone, or hidden from us (hidepid)
        try:
            name, state, ticks, start, rss = _parse_stat(stat)
        except (ValueError, IndexError):
            self._known.pop(pid, None)
            return None
        created = (
            None
            if start is None or self._boot_time is None
            else start / _CLOCK_TICKS + self._boot_time
        )
        known = self._known.get(pid)
        cpu: float | None = None
        if known is not None and known.start == start and start is not None:
            # the same process as last poll: CPU % since then (psutil's cpu_percent)
            if ticks is not None and known.ticks is not None and mono > known.at:
                cpu = round(100.0 * (ticks - known.ticks) / _CLOCK_TICKS / (mono - known.at), 1)
            ident = known.ident
        else:
            try:
                ident = self._identity(pid, base, name, state, rss)
            except _Gone:
                self._known.pop(pid, None)
                return None
        self._known[pid] = _Known(start, ticks, mono, ident)
        return {
            **ident,
            "cpu_percent": cpu,
            "rss": rss,
            "running_s": max(0.0, now - created) if created is not None else None,
            "host_visible": True,
        }

    def _identity(
        self, pid: int, base: str, name: str | None, state: bytes | None, rss: int | None
    ) -> dict[str, Any]:
        """Who the process is: read once, when it is first seen (see the module docstring)."""
        cmdline = self._cmdline(base)
        if state == b"Z" and not cmdline:
            raise _Gone  # a zombie: psutil reports it as gone (ZombieProcess)
        if name is not None and len(name) >= _TASK_COMM_LEN and cmdline:
            extended = os.path.basename(cmdline[0])
            if extended.startswith(name):
                name = extended
        user, nspid = self._status(base)
        if user is None and name is None and cmdline is None and rss is None:
            raise _Gone  # nothing readable: as good as invisible
        container = self._container(base)
        return {
            "user": None if user is None else visible(user),
            "name": None if name is None else visible(name),
            "cmdline": tuple(visible(arg) for arg in cmdline) if cmdline else None,
            "container": container,
            "container_pid": nspid if container else None,
        }

    def _container(self, base: str) -> str | None:
        """containers.container_of, on the cgroup file read here (the same label)."""
        try:
            text = _read_bytes(f"{base}/cgroup").decode("utf-8", "replace")
        except OSError:
            return None
        if not any(marker in text for marker in CGROUP_MARKERS):
            return None  # on the host, as most processes are
        from gputui.sources.host import containers

        ref = containers.container_ref_from_cgroup(text)
        if ref is None:
            return None
        from pathlib import Path

        return containers.with_names(ref, Path(self._root_dir)).label

    def _cmdline(self, base: str) -> list[str] | None:
        """psutil's cmdline(): NUL-separated, or space-separated after a setproctitle()."""
        try:
            data = _read_bytes(f"{base}/cmdline").decode(_ENCODING, _ERRORS)
        except PermissionError:
            return None
        except OSError:
            raise _Gone from None
        if not data:
            return []
        sep = "\x00" if data.endswith("\x00") else " "
        if data.endswith(sep):
            data = data[:-1]
        args = data.split(sep)
        if sep == "\x00" and len(args) == 1 and " " in data:
            args = data.split(" ")
        return args

    def _status(self, base: str) -> tuple[str | None, int | None]:
        """(user name of the real uid, PID in the innermost namespace when it differs)."""
        try:
            data = _read_bytes(f"{base}/status")
        except PermissionError:
            return None, None
        except OSError:
            raise _Gone from None
        uid = _line(data, b"\nUid:")
        ids = _line(data, b"\nNSpid:")
        user = self._user(int(uid[0])) if uid and uid[0].isdigit() else None
        nspid = int(ids[-1]) if len(ids) >= 2 and ids[-1].isdigit() else None
        return user, nspid

    def _user(self, uid: int) -> str:
        """The name of `uid`, through NSS once per uid (psutil asks once per process)."""
        name = self._users.get(uid)
        if name is None:
            import pwd

            try:
                name = pwd.getpwuid(uid).pw_name
            except KeyError:
                name = str(uid)  # no passwd entry: psutil shows the number too
            self._users[uid] = name
        return name
