"""Process features for nvitop/nvtop users: tree, tags, per-process history, environment,
containers in details, and the mouse. Driven with Pilot as a user would."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any

import psutil
import pytest
from textual import events
from textual.widgets import Static

from gputui.sources.host.source import ProcessExtras
from gputui.tui.screens.kill import KillScreen
from gputui.tui.screens.process import ProcessScreen
from gputui.tui.views.kill import KillPolicy
from gputui.tui.widgets.gpu_panel import GpuPanel
from gputui.tui.widgets.process_table import TAG_MARK, ProcessTable
from tests.waiting import wait_for

from .conftest import GIB, ScriptedSource, make_process, make_snapshot
from .test_tui_pilot import _me, _select_pid, make_app, plain

# A torchrun job: launcher 500 (no GPU) under a shell 400; workers 1001 and 1002 on two GPUs;
# 1003 started alone from the same shell.
PARENTS: dict[int, tuple[tuple[int, str], ...]] = {
    1001: ((500, "torchrun"), (400, "bash")),
    1002: ((500, "torchrun"), (400, "bash")),
    1003: ((400, "bash"),),
}


def job_snapshot(source: str = "nvml") -> Any:
    return make_snapshot(
        processes=(
            make_process(0, 1001, gpu_memory=8 * GIB),
            make_process(1, 1002, gpu_memory=7 * GIB),
            make_process(1, 1003, gpu_memory=9 * GIB, cmdline=("python", "eval.py")),
        ),
        source=source,
    )


class Parents:
    def __init__(self, table: Mapping[int, tuple[tuple[int, str], ...]]) -> None:
        self.table = table
        self.calls: list[list[int]] = []

    def __call__(self, pids: Sequence[int]) -> dict[int, tuple[tuple[int, str], ...]]:
        self.calls.append(list(pids))
        return {pid: self.table[pid] for pid in pids if pid in self.table}


def commands(table: ProcessTable) -> list[tuple[str, str]]:
    """(PID cell, command cell) per row, in display order."""
    col = [c.key for c in table.shown]
    return [
        (cells[col.index("pid")], cells[col.index("command")])
        for cells in (table.row_text(k) for k in table.visible_keys())
    ]


# -- tree -----------------------------------------------------------------------------------


async def test_t_shows_processes_under_their_parents_and_back() -> None:
    parents = Parents(PARENTS)
    app = make_app(ScriptedSource(job_snapshot()), parents_of=parents)
    async with app.run_test(size=(140, 40)) as pilot:
        table = app.dashboard.query_one(ProcessTable)
        await wait_for(pilot, lambda: table.row_count == 3)
        flat = [pid for pid, _ in commands(table)]
        assert flat == ["1003", "1001", "1002"]  # by GPU memory
        assert parents.calls == []  # nothing read while the tree is not shown
        await pilot.press("t")
        await wait_for(pilot, lambda: table.row_count == 5)
        rows = commands(table)
        assert rows == [
            ("400", "bash"),
            ("1003", "├─ python eval.py"),
            ("500", "└─ torchrun"),
            ("1001", "   ├─ python train.py --rank=1001"),
            ("1002", "   └─ python train.py --rank=1002"),
        ]
        assert sorted(parents.calls[0]) == [1001, 1002, 1003]
        # A parent row is not a GPU process: nothing to kill or detail there.
        table.move_cursor(row=0)
        await pilot.pause()
        assert table.selected is None
        await pilot.press("t")
        await wait_for(pilot, lambda: table.row_count == 3)
        assert [pid for pid, _ in commands(table)] == flat


async def test_tree_of_demo_data_reads_no_parents() -> None:
    parents = Parents(PARENTS)
    app = make_app(ScriptedSource(job_snapshot(source="simulated")), parents_of=parents)
    async with app.run_test(size=(140, 40)) as pilot:
        table = app.dashboard.query_one(ProcessTable)
        await wait_for(pilot, lambda: table.row_count == 3)
        await pilot.press("t")
        for _ in range(5):
            await pilot.pause(0.05)
        assert parents.calls == []  # made-up PIDs may name real, unrelated processes here
        assert table.row_count == 3 and table.tree_view


# -- tags and kill --------------------------------------------------------------------------


@pytest.fixture
def sleepers() -> Iterator[list[subprocess.Popen[bytes]]]:
    procs = [
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"]) for _ in range(3)
    ]
    yield procs
    for p in procs:
        if p.poll() is None:
            p.kill()
        p.wait(timeout=10)


def _listed(procs: list[subprocess.Popen[bytes]]) -> Any:
    now = time.time()
    listed = tuple(
        make_process(
            0,
            p.pid,
            user=_me(),
            gpu_memory=(3 - i) * GIB,
            running_s=now - psutil.Process(p.pid).create_time(),
        )
        for i, p in enumerate(procs)
    )
    return make_snapshot(processes=listed, source="nvml", timestamp=now)


async def test_tagged_processes_are_signalled_together_each_rechecked(
    sleepers: list[subprocess.Popen[bytes]],
) -> None:
    sent: list[tuple[int, int]] = []
    policy = KillPolicy(send_signal=lambda pid, sig: sent.append((pid, sig)))
    source = ScriptedSource(_listed(sleepers))
    app = make_app(source, kill_policy=policy)
    a, b, c = (p.pid for p in sleepers)
    async with app.run_test(size=(140, 40)) as pilot:
        table = app.dashboard.query_one(ProcessTable)
        await _select_pid(pilot, app, a)
        await pilot.press("space")  # tags a, steps down to b
        await pilot.press("down")
        await pilot.press("space")  # tags c
        assert [p.pid for p in table.tagged_processes] == [a, c]
        marked = [pid for pid, cmd in commands(table) if cmd.startswith(TAG_MARK)]
        assert marked == [str(a), str(c)]
        await pilot.press("k")
        await wait_for(pilot, lambda: isinstance(app.screen, KillScreen))
        dialog = app.screen
        assert isinstance(dialog, KillScreen)
        assert [p.pid for p in dialog.procs] == [a, c]
        assert "these 2 processes" in str(dialog.query_one("#kill-title").render())
        # c exits while the dialog is open: a still gets its signal, c is reported.
        sleepers[2].kill()
        sleepers[2].wait()
        await pilot.press("t")
        await wait_for(pilot, lambda: app.screen is app.dashboard)
        assert sent == [(a, signal.SIGTERM)]
        assert b not in [pid for pid, _ in sent]
        assert table.tagged == set()  # done: the tags go
        messages = [n.message for n in app._notifications]
        assert any(
            f"sent SIGTERM to PID {a}" in m and f"PID {c} had already exited" in m for m in messages
        )


async def test_tagged_demo_processes_are_refused_each_with_its_reason() -> None:
    sent: list[tuple[int, int]] = []
    app = make_app(
        ScriptedSource(job_snapshot(source="simulated")),
        kill_policy=KillPolicy(send_signal=lambda pid, sig: sent.append((pid, sig))),
    )
    async with app.run_test(size=(140, 40)) as pilot:
        table = app.dashboard.query_one(ProcessTable)
        await wait_for(pilot, lambda: table.row_count == 3)
        await pilot.press("space", "space")
        assert len(table.tagged) == 2
        await pilot.press("k")
        await pilot.pause()
        assert app.screen is app.dashboard and sent == []
        (note,) = [n for n in app._notifications if n.title == "kill refused"]
        assert note.message.count("simulated process") == 2


async def test_a_tag_goes_with_its_row() -> None:
    source = ScriptedSource(job_snapshot())
    app = make_app(source, parents_of=Parents({}))
    async with app.run_test(size=(140, 40)) as pilot:
        table = app.dashboard.query_one(ProcessTable)
        await wait_for(pilot, lambda: table.row_count == 3)
        await pilot.press("space")  # 1003, the largest
        assert table.tagged == {"1:1003"}
        await pilot.press("space")  # 1001 too
        await pilot.press("slash", *"train", "enter")  # the filter hides 1003
        await wait_for(pilot, lambda: table.row_count == 2)
        assert table.tagged == {"0:1001"}
        snap = job_snapshot()
        source.next_snapshot = replace(snap, processes=snap.processes[1:], timestamp=2e9)
        await wait_for(pilot, lambda: table.row_count == 1)
        assert table.tagged == set()  # 1001 exited


# -- details: history, environment, container ------------------------------------------------


async def test_details_show_this_process_history_as_sparklines() -> None:
    base = job_snapshot()
    series = [
        replace(
            base,
            processes=(
                replace(
                    base.processes[0], gpu_memory=gib * GIB, sm_util=30 * i, running_s=125.0 + i
                ),
            ),
            timestamp=base.timestamp + i,
        )
        for i, gib in enumerate((1, 2, 4, 1))
    ]
    source = ScriptedSource(series[0])
    app = make_app(source, process_extras=lambda pid, start: ProcessExtras(environment_note="-"))

    def bars() -> str:
        shown = plain(app.screen.query_one("#process-history", Static))
        return shown.split("\n")[0].removeprefix("GPU memory").strip().split("  ")[0]

    async with app.run_test(size=(140, 40)) as pilot:
        table = app.dashboard.query_one(ProcessTable)
        for snap in series[:3]:
            source.next_snapshot = snap
            await wait_for(
                pilot,
                lambda t=snap.timestamp: (
                    app.latest_snapshot is not None and app.latest_snapshot.timestamp == t
                ),
            )
        await wait_for(pilot, lambda: table.row_count == 1)
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, ProcessScreen))
        mem_line, sm_line = plain(app.screen.query_one("#process-history", Static)).split("\n")
        assert mem_line.rstrip().endswith("4.0 GiB (peak 4.0 GiB)")
        assert len(bars()) == 3  # one bar per poll of this process, nothing older
        assert bars()[0] < bars()[1] < bars()[2] == "█"
        assert sm_line.rstrip().endswith("60%")
        # Live: the next poll adds a point while the dialog is open.
        source.next_snapshot = series[3]
        await wait_for(pilot, lambda: len(bars()) == 4)
        assert bars()[3] == bars()[0]


GPU_ENV = {
    "PATH": os.environ.get("PATH", ""),
    "CUDA_VISIBLE_DEVICES": "2",
    "NCCL_DEBUG": "WARN",
    "RANK": "3",
    "HF_TOKEN": "hunter2",
}


async def test_details_read_the_environment_of_a_real_process_once_opened() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], env=GPU_ENV)
    reads: list[int] = []
    from gputui.sources.host.source import read_extras

    def extras(pid: int, start: float | None) -> Any:
        reads.append(pid)
        return read_extras(pid, start)

    try:
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            try:
                if psutil.Process(child.pid).environ().get("RANK") == "3":
                    break
            except psutil.Error:
                pass
            time.sleep(0.02)
        snap = _listed([child])
        app = make_app(ScriptedSource(snap), process_extras=extras)
        async with app.run_test(size=(140, 50)) as pilot:
            await _select_pid(pilot, app, child.pid)
            assert reads == []  # nothing read for the table
            await pilot.press("enter")
            await wait_for(pilot, lambda: isinstance(app.screen, ProcessScreen))
            env = app.screen.query_one("#process-env", Static)
            await wait_for(pilot, lambda: "CUDA_VISIBLE_DEVICES=2" in plain(env))
            text = plain(env)
            assert "NCCL_DEBUG=WARN" in text and "RANK=3" in text
            assert "hunter2" not in text and "PATH=" not in text
            assert "host process" in plain(app.screen.query_one("#process-container", Static))
            assert reads == [child.pid]
    finally:
        child.kill()
        child.wait()


async def test_demo_processes_have_no_environment_read() -> None:
    app = make_app(
        ScriptedSource(job_snapshot(source="simulated")),
        process_extras=lambda pid, start: pytest.fail("read for a made-up PID"),
    )
    async with app.run_test(size=(140, 40)) as pilot:
        table = app.dashboard.query_one(ProcessTable)
        await wait_for(pilot, lambda: table.row_count == 3)
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, ProcessScreen))
        await pilot.pause(0.1)
        assert "simulated process" in plain(app.screen.query_one("#process-env", Static))


async def drawn(pilot: Any, table: ProcessTable) -> None:
    """A click lands on what was last drawn: wait for the table's frame to be on screen."""
    await wait_for(pilot, lambda: table.settled)
    await pilot.pause(0.05)
    await pilot.pause()


# -- mouse ----------------------------------------------------------------------------------


async def test_click_header_sorts_click_row_selects_and_again_opens_details() -> None:
    app = make_app(ScriptedSource(job_snapshot(source="simulated")))
    async with app.run_test(size=(140, 40)) as pilot:
        table = app.dashboard.query_one(ProcessTable)
        await wait_for(pilot, lambda: table.row_count == 3)
        x = sum(c.get_render_width(table) for c in list(table.columns.values())[:2])
        await drawn(pilot, table)
        # PID header: one click sorts by PID ascending, a second reverses it.
        await pilot.click(table, offset=(x - 3, 1))
        await wait_for(pilot, lambda: table.sort_column == "pid")
        assert not table.sort_reverse
        await drawn(pilot, table)
        assert [pid for pid, _ in commands(table)] == ["1001", "1002", "1003"]
        await pilot.click(table, offset=(x - 3, 1))
        await wait_for(pilot, lambda: table.sort_reverse)
        await drawn(pilot, table)
        assert [pid for pid, _ in commands(table)] == ["1003", "1002", "1001"]
        await pilot.click(table, offset=(x - 3, 4))  # the third row
        await drawn(pilot, table)
        assert table.selected is not None and table.selected.pid == 1001
        assert app.screen is app.dashboard
        await pilot.click(table, offset=(x - 3, 4))  # the selected row again: its details
        await wait_for(pilot, lambda: isinstance(app.screen, ProcessScreen))
        assert app.screen.proc.pid == 1001


async def test_scroll_wheel_scrolls_the_process_table() -> None:
    procs = tuple(
        make_process(i % 2, 2000 + i, gpu_memory=(100 - i) * GIB // 10) for i in range(60)
    )
    app = make_app(ScriptedSource(make_snapshot(processes=procs)))
    async with app.run_test(size=(120, 30)) as pilot:
        table = app.dashboard.query_one(ProcessTable)
        await wait_for(pilot, lambda: table.row_count == 60)
        assert table.scroll_y == 0
        await pilot._post_mouse_events([events.MouseScrollDown], widget=table, offset=(10, 3))
        await pilot._post_mouse_events([events.MouseScrollDown], widget=table, offset=(10, 3))
        await wait_for(pilot, lambda: table.scroll_y > 0)
        down = table.scroll_y
        await pilot._post_mouse_events([events.MouseScrollUp], widget=table, offset=(10, 3))
        await wait_for(pilot, lambda: table.scroll_y < down)


async def test_click_on_a_gpu_opens_its_device_details() -> None:
    from gputui.tui.screens.device import DeviceScreen

    app = make_app(ScriptedSource(job_snapshot(source="simulated")))
    async with app.run_test(size=(140, 40)) as pilot:
        table = app.dashboard.query_one(ProcessTable)
        await wait_for(pilot, lambda: table.row_count == 3)
        panel = app.dashboard.query_one("#gpu-1", GpuPanel)
        await drawn(pilot, table)
        await pilot.click(panel, offset=(2, 1))
        await wait_for(pilot, lambda: isinstance(app.screen, DeviceScreen))
        assert app.screen.device.index == 1
