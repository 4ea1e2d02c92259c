"""The one-shot /proc reader (sources/host/procfs.py) says what psutil's HostSampler says.

`gputui snapshot` reads host details from /proc itself to skip psutil's
import; its output must not change. Compared field by field, for every
process of this machine, for processes made to be odd (a long name, a
space-separated command line, a zombie, an exited PID), and for a fake /proc.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from gputui.model.snapshot import GpuProcess
from gputui.sources.host.procfs import ProcfsHost
from gputui.sources.host.source import HostSampler
from tests.children import busy_child

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").is_file(), reason="Linux /proc only")

FIELDS = ("user", "name", "cmdline", "container", "container_pid", "host_visible", "cpu_percent")


def _fields(p: GpuProcess) -> dict[str, object]:
    return {f: getattr(p, f) for f in FIELDS}


def _compare(pids: list[int]) -> None:
    """Our reading of every PID (one ProcfsHost for all, as a poll does) against psutil's.

    A process can change while we look (exit, exec, a kernel worker renamed after its
    current work queue): a PID counts as wrong only if it differs in three readings in a row.
    """
    procs = [GpuProcess(0, pid, "compute") for pid in pids]
    wrong: set[int] | None = None
    for _ in range(3):
        ours = ProcfsHost().enrich(procs)
        theirs = HostSampler().enrich(procs)
        again = ProcfsHost().enrich(procs)
        now: set[int] = set()
        compared = 0
        for a, b, c in zip(ours, theirs, again, strict=True):
            if _fields(a) != _fields(c):
                continue  # changed under our eyes: nothing to compare this time
            compared += 1
            if _fields(a) != _fields(b):
                now.add(a.pid)
            elif a.host_visible:
                assert a.running_s is not None and b.running_s is not None
                assert abs(a.running_s - b.running_s) < 1.0, a.pid
                assert (a.rss is None) == (b.rss is None), a.pid
        assert compared >= len(pids) // 2
        wrong = now if wrong is None else wrong & now
        if not wrong:
            return
    first = next(p for p in ours if p.pid in (wrong or set()))
    twin = next(p for p in theirs if p.pid == first.pid)
    assert _fields(first) == _fields(twin), first.pid


def test_every_process_of_this_machine() -> None:
    pids = sorted(int(name) for name in os.listdir("/proc") if name.isdigit())
    assert os.getpid() in pids
    _compare(pids)


@pytest.fixture
def odd_children(tmp_path: Path) -> Iterator[list[int]]:
    code = "import sys, time\nsys.stdout.close()\ntime.sleep(30)"
    # comm keeps 15 characters ("python-with-a-l"); psutil extends it from the command line
    long_name = tmp_path / "python-with-a-long-name"
    long_name.symlink_to(sys.executable)
    kids = [
        subprocess.Popen([sys.executable, "-c", code, "arg with spaces", "\x1b]0;x\x07"]),
        subprocess.Popen([str(long_name), "-c", "import time; time.sleep(30)"]),
    ]
    zombie = subprocess.Popen([sys.executable, "-c", "pass"])
    exited = subprocess.Popen([sys.executable, "-c", "pass"])
    exited.wait()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:  # wait for the execs and for the zombie to die
        try:
            ready = all(psutil.Process(k.pid).cmdline()[:1] != [] for k in kids)
            if ready and psutil.Process(zombie.pid).status() == psutil.STATUS_ZOMBIE:
                break
        except psutil.Error:
            pass
        time.sleep(0.02)
    try:
        yield [k.pid for k in kids] + [zombie.pid, exited.pid, 0, -1, 2**31 - 1]
    finally:
        for k in kids:
            k.kill()
            k.wait()
        zombie.wait()


def test_odd_processes(odd_children: list[int]) -> None:
    _compare(odd_children)
    out = {p.pid: p for p in ProcfsHost().enrich([GpuProcess(0, p, "compute") for p in odd_children])}
    first = out[odd_children[0]]
    assert first.host_visible and first.cmdline is not None
    assert first.cmdline[-2:] == ("arg with spaces", "^[]0;x^G")  # made visible, once
    assert out[odd_children[1]].name == "python-with-a-long-name"
    zombie, exited = odd_children[-5], odd_children[-4]
    assert not out[zombie].host_visible and not out[exited].host_visible
    assert all(not out[p].host_visible for p in odd_children[-3:])


def test_host_line_matches_psutil() -> None:
    ours = ProcfsHost().sample()
    assert ours.memory_total == psutil.virtual_memory().total
    assert ours.swap_total == psutil.swap_memory().total
    assert ours.memory_used is not None and ours.memory_available is not None
    assert ours.memory_used == ours.memory_total - ours.memory_available
    assert ours.load_average is not None and len(ours.load_average) == 3
    assert ours.cpu_percent is None and ours.per_cpu_percent == ()  # too soon to measure


def test_cpu_percent_once_the_poll_took_long_enough() -> None:
    host = ProcfsHost()
    time.sleep(0.1)
    snap = host.sample()
    assert snap.cpu_percent is not None and 0 <= snap.cpu_percent <= 100
    assert len(snap.per_cpu_percent) == psutil.cpu_count()


def _between(ours: float, a: float, b: float, slack: float) -> bool:
    return min(a, b) - slack <= ours <= max(a, b) + slack


def test_cpu_counters_are_psutils() -> None:
    """The host line's CPU % is `percent()` (shared with host.py) over these counters, so
    the counters are what is compared: each field of the total and of every core, read
    between two psutil reads of the same /proc/stat (a counter only moves on by then; a
    tick of slack for iowait, which the kernel lets step back)."""
    tick = 1.0 / os.sysconf("SC_CLK_TCK")
    before = psutil.cpu_times(), psutil.cpu_times(percpu=True)
    ours = ProcfsHost()._cpu_times()
    after = psutil.cpu_times(), psutil.cpu_times(percpu=True)
    assert ours is not None
    assert len(ours[1]) == len(before[1]) == len(after[1])
    pairs = [(ours[0], before[0], after[0])] + list(zip(ours[1], before[1], after[1], strict=True))
    for mine, b, a in pairs:
        for name in b._fields:
            assert _between(getattr(mine, name), getattr(b, name), getattr(a, name), tick), name
    assert ours[0]._fields == before[0]._fields  # no field of ours that psutil lacks


def test_memory_swap_and_load_are_psutils() -> None:
    """Total, available and used memory (used = total - available, as psutil >= 6 and
    `free` define it), swap total and used, and the load average, against psutil's
    readings just before and after ours. Memory moves while other tests run: a reading
    counts as wrong only if it is outside psutil's in five tries in a row."""
    for _ in range(5):
        vm0, sw0, load0 = psutil.virtual_memory(), psutil.swap_memory(), psutil.getloadavg()
        ours = ProcfsHost().sample()
        vm1, sw1, load1 = psutil.virtual_memory(), psutil.swap_memory(), psutil.getloadavg()
        assert ours.memory_total == vm0.total == vm1.total
        assert ours.swap_total == sw0.total == sw1.total
        assert ours.memory_available is not None and ours.memory_used is not None
        assert ours.swap_used is not None and ours.load_average is not None
        if (
            _between(ours.memory_available, vm0.available, vm1.available, 0)
            and _between(ours.memory_used, vm0.total - vm0.available, vm1.total - vm1.available, 0)
            and _between(ours.swap_used, sw0.used, sw1.used, 0)
            and ours.load_average in (load0, load1)
        ):
            return
    pytest.fail(f"/proc host line {ours} differs from psutil's {vm1}, {sw1}, {load1}")


def _fake_proc(root: Path, pid: int, *, comm: str, cmdline: bytes, uid: int, cgroup: str) -> None:
    d = root / str(pid)
    d.mkdir(parents=True)
    rest = " ".join(["S", "1"] + ["0"] * 17 + ["12345"] + ["0"] + ["77"] + ["0"] * 20)
    (d / "stat").write_text(f"{pid} ({comm}) {rest}\n")
    (d / "status").write_text(
        f"Name:\t{comm}\nUid:\t{uid}\t{uid}\t{uid}\t{uid}\nNSpid:\t{pid}\t7\n"
    )
    (d / "cmdline").write_bytes(cmdline)
    (d / "cgroup").write_text(cgroup)


def test_a_fake_proc_tree(tmp_path: Path) -> None:
    proc = tmp_path / "proc"
    proc.mkdir()
    (proc / "stat").write_text("cpu  1 2 3 4 5 6 7 8 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\nbtime 1000\n")
    (proc / "meminfo").write_text(
        "MemTotal: 1000 kB\nMemFree: 100 kB\nMemAvailable: 600 kB\n"
        "SwapTotal: 50 kB\nSwapFree: 20 kB\n"
    )
    cid = "a" * 64
    _fake_proc(
        proc, 4242, comm="trainer", cmdline=b"python\x00train.py\x00", uid=0,
        cgroup=f"0::/system.slice/docker-{cid}.scope\n",
    )
    _fake_proc(proc, 4243, comm="nobody-knows-me", cmdline=b"x y z", uid=2**31 - 7, cgroup="0::/\n")
    host = ProcfsHost(proc_root=proc, root=tmp_path)
    a, b = host.enrich([GpuProcess(0, 4242, "compute"), GpuProcess(1, 4243, "compute")])
    ticks = os.sysconf("SC_CLK_TCK")
    assert a.user == "root" and a.cmdline == ("python", "train.py") and a.name == "trainer"
    assert a.container == cid[:12] and a.container_pid == 7
    assert a.rss == 77 * os.sysconf("SC_PAGE_SIZE")
    assert a.running_s == pytest.approx(time.time() - (1000 + 12345 / ticks), abs=1.0)
    # no passwd entry: the uid, as psutil shows it; no NUL: split at spaces; no container
    assert b.user == str(2**31 - 7) and b.cmdline == ("x", "y", "z")
    assert b.container is None and b.container_pid is None
    snap = host.sample()
    assert (snap.memory_total, snap.memory_used, snap.memory_available) == (
        1000 * 1024, 400 * 1024, 600 * 1024
    )
    assert (snap.swap_total, snap.swap_used) == (50 * 1024, 30 * 1024)


@pytest.fixture
def spinner() -> Iterator[subprocess.Popen[bytes]]:
    with busy_child("spin-marker") as proc:
        yield proc


def test_cpu_percent_from_the_second_poll_on(spinner: subprocess.Popen[bytes]) -> None:
    host = ProcfsHost()
    gp = GpuProcess(0, spinner.pid, "compute")
    (first,) = host.enrich([gp])
    assert first.cpu_percent is None  # one sample: N/A rather than a made-up 0
    for _ in range(30):  # on a loaded machine the spinner may get no tick in a short gap
        time.sleep(0.1)
        (later,) = host.enrich([gp])
        assert later.cpu_percent is not None and later.cpu_percent >= 0
        if later.cpu_percent > 0:
            break
    assert later.cpu_percent > 0
    assert later.cmdline == first.cmdline and later.rss is not None


def test_identity_read_once_per_process_and_again_for_a_reused_pid(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    proc = tmp_path / "proc"
    proc.mkdir()
    (proc / "stat").write_text("cpu  1 2 3 4 5 6 7 8 0 0\nbtime 1000\n")
    _fake_proc(proc, 4242, comm="trainer", cmdline=b"python\x00a.py\x00", uid=0, cgroup="0::/\n")
    host = ProcfsHost(proc_root=proc, root=tmp_path)
    cmdlines: list[str] = []
    real = host._cmdline

    def counting(base: str) -> list[str] | None:
        cmdlines.append(base)
        return real(base)

    monkeypatch.setattr(host, "_cmdline", counting)
    gp = GpuProcess(0, 4242, "compute")
    for _ in range(3):
        (out,) = host.enrich([gp])
        assert out.cmdline == ("python", "a.py")
    assert len(cmdlines) == 1
    # the PID now names a process started later, with another command line
    stat = proc / "4242" / "stat"
    stat.write_text(stat.read_text().replace(" 12345 ", " 22345 "))
    (proc / "4242" / "cmdline").write_bytes(b"python\x00b.py\x00")
    (out,) = host.enrich([gp])
    assert len(cmdlines) == 2 and out.cmdline == ("python", "b.py")
    assert out.cpu_percent is None  # a new process: no previous sample
    # gone from the GPU, then back: read again (the PID may be someone else by then)
    host.enrich([])
    host.enrich([gp])
    assert len(cmdlines) == 3


def test_cgroup_markers_are_the_container_patterns_own() -> None:
    """procfs skips containers.py for a cgroup without any of these: the two lists agree."""
    from gputui.sources.host import containers, procfs

    assert procfs.CGROUP_MARKERS == containers._MARKERS
    cid = "b" * 64
    for path in (
        f"0::/system.slice/docker-{cid}.scope",
        f"0::/kubepods/besteffort/pod12345678-1234-1234-1234-123456789012/{cid}",
        f"0::/machine.slice/libpod-{cid}.scope",
        f"0::/system.slice/crio-{cid}.scope",
        f"0::/system.slice/cri-containerd-{cid}.scope",
        "0::/lxc.payload.web/init.scope",
    ):
        assert containers.container_ref_from_cgroup(path + "\n") is not None, path
        assert any(m in path for m in procfs.CGROUP_MARKERS), path


def test_pid_exists_is_psutils() -> None:
    """For every PID of the machine, thread IDs (not processes), an exited child, 0, negatives
    and numbers no process has; the dashboard asks it for a row without host details."""
    import threading

    from gputui.sources.host.procfs import pid_exists

    done = threading.Event()
    worker = threading.Thread(target=done.wait)
    worker.start()
    exited = subprocess.Popen([sys.executable, "-c", "pass"])
    exited.wait()
    try:
        tids = [int(t) for t in os.listdir(f"/proc/{os.getpid()}/task")]
        pids = [int(p) for p in os.listdir("/proc") if p.isdigit()]
        odd = [exited.pid, 0, -1, -os.getpid(), 2**22 + 1, 2**31 - 1]
        assert any(t != os.getpid() for t in tids)  # the thread: an ID psutil says is no process
        for pid in pids + tids + odd:
            assert pid_exists(pid) == psutil.pid_exists(pid), pid
    finally:
        done.set()
        worker.join()
