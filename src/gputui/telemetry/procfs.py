"""Host details for a one-shot snapshot, read straight from Linux's /proc, without psutil.

Why not psutil here: `gputui snapshot` runs once and exits (people run it in
loops and scripts), and importing psutil costs 15-25 ms of CPU, a third to a
half of the whole pynvml floor (`import pynvml; nvmlInit()`); a one-shot needs
five small files per GPU process and three of the host. The dashboard keeps
psutil (telemetry/host.py): there the import is paid once and psutil's cached
Process objects give CPU percentages between polls.

What is read, once per PID (one PID on two GPUs is read once):
- /proc/PID/stat: name, state, start time (clock ticks since boot, plus btime
  from /proc/stat: psutil's create time), resident set size (pages);
- /proc/PID/status: the real uid, turned into a user name through `pwd` once
  per uid (an NSS lookup can be an LDAP round trip), and NSpid;
- /proc/PID/cmdline, /proc/PID/cgroup (the container, telemetry/containers.py).
Each value follows psutil's definition (tests/telemetry_sim/test_procfs_host.py
compares them for every PID of the machine): a 15-character name is extended
from the command line, a NUL-less command line is split at spaces, a uid
without a passwd entry is shown as its number, a zombie is not visible.
The CPU percentage of a process needs two samples: a one-shot has one, so it
is None (N/A), as psutil's first sample is in HostSampler.

Host: CPU times from /proc/stat (a percentage only when the poll took long
enough to measure one, as HostSampler does), memory and swap from
/proc/meminfo (`used` is total - available, psutil >= 6's and `free`'s
definition), load from os.getloadavg(), the host name from uname.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

from gputui.telemetry import containers
from gputui.telemetry.snapshot import GpuProcess, HostSnapshot
from gputui.textsafe import visible

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


class CpuTimes(NamedTuple):
    """System CPU seconds, psutil's `scputimes` fields (Linux), for `percent`."""

    user: float = 0.0
    nice: float = 0.0
    system: float = 0.0
    idle: float = 0.0
    iowait: float = 0.0
    irq: float = 0.0
    softirq: float = 0.0
    steal: float = 0.0
    guest: float = 0.0
    guest_nice: float = 0.0


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


def _read_bytes(path: str) -> bytes:
    """A whole /proc file in as few system calls as the kernel allows.

    `open()` adds an fstat, an lseek and a buffer to each file; at ~13 us per
    system call (a VM) and four files per process, that doubled the host cost.
    """
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        chunks = []
        while True:
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            chunks.append(chunk)
            if len(chunk) < 4096:  # /proc answers a read with what it has; one more is EOF
                rest = os.read(fd, 65536)
                if rest:
                    chunks.append(rest)
                    continue
                break
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


class _Gone(Exception):
    """The PID is not (or no longer) a process we can see."""


class ProcfsHost:
    """The `HostSampler` interface of telemetry/nvml.py for one poll, from /proc (see above)."""

    def __init__(self, *, proc_root: Path = containers.PROC, root: Path = Path("/")) -> None:
        self._proc_root = proc_root
        self._proc = str(proc_root)
        self._root = root
        self._hostname = visible(os.uname().nodename)
        self._users: dict[int, str] = {}
        self._notices: list[str] = []
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
        if time.monotonic() - self._primed_at >= MIN_INTERVAL_S and self._primed is not None:
            now = self._cpu_times()
            if now is not None:
                cpu = percent(self._primed[0], now[0])
                if len(now[1]) == len(self._primed[1]):
                    per_cpu = tuple(
                        percent(a, b) for a, b in zip(self._primed[1], now[1], strict=True)
                    )
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
        import dataclasses

        now = time.time()
        found: dict[int, dict[str, Any] | None] = {}
        for p in processes:
            if p.pid not in found:
                found[p.pid] = self._read(p.pid, now)
        if (
            found
            and CONTAINER_NOTICE not in self._notices
            and all(
                info is None and not containers.pid_visible(pid, self._proc_root)
                for pid, info in found.items()
            )
            and containers.running_in_container(self._proc_root, self._root)
        ):
            self._notices.append(CONTAINER_NOTICE)
        return tuple(
            dataclasses.replace(p, **(found[p.pid] or INVISIBLE)) for p in processes
        )

    def notices(self) -> tuple[str, ...]:
        return tuple(self._notices)

    def _read(self, pid: int, now: float) -> dict[str, Any] | None:
        if pid <= 0:
            return None  # NVML can report 0; psutil has no such process either
        base = f"{self._proc}/{pid}"
        try:
            stat = _read_bytes(f"{base}/stat")
        except PermissionError:
            stat = None
        except OSError:
            return None  # gone, or hidden from us (hidepid)
        try:
            return self._describe(pid, base, stat, now)
        except _Gone:
            return None

    def _describe(self, pid: int, base: str, stat: bytes | None, now: float) -> dict[str, Any]:
        name = state = None
        created = rss = None
        if stat is not None:
            try:
                name = stat[stat.index(b"(") + 1 : stat.rindex(b")")].decode(_ENCODING, _ERRORS)
                fields = stat[stat.rindex(b")") + 2 :].split()
                state = fields[0]
                if self._boot_time is not None:  # btime, read with the CPU times at start
                    created = float(fields[19]) / _CLOCK_TICKS + self._boot_time
                rss = int(fields[21]) * _PAGE_SIZE
            except (ValueError, IndexError):
                raise _Gone from None
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
            "cpu_percent": None,  # one sample: see the module docstring
            "rss": rss,
            "running_s": max(0.0, now - created) if created is not None else None,
            "host_visible": True,
        }

    def _container(self, base: str) -> str | None:
        """containers.container_of, on the cgroup file read here (the same label)."""
        try:
            text = _read_bytes(f"{base}/cgroup").decode("utf-8", "replace")
        except OSError:
            return None
        ref = containers.container_ref_from_cgroup(text) if text else None
        return None if ref is None else containers.with_names(ref, self._root).label

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
