"""What the process list and the process dialog say: an exited process is called exited, an
unavailable process list is said to be unavailable (not empty), the details dialog follows
the polls, and `gputui snapshot` lists processes by GPU memory."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace
from typing import Any

from gputui.model.snapshot import PROCESS_LIST
from gputui.render.snapshot_text import render
from gputui.tui.screens.process import ProcessScreen
from tests.waiting import wait_for

from .scripted_app import GIB, make_app, ready_table, screen_lines

# -- exited processes and unavailable process lists say so ------------------------------


def _exited_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


async def test_exited_process_is_described_as_exited(
    scripted_source: Any, snapshot_factory: Any, process_factory: Any
) -> None:
    gone = process_factory(0, _exited_pid(), user=None, name=None, cmdline=None, host_visible=False)
    scripted_source.next_snapshot = snapshot_factory(source="nvml", processes=(gone,))
    app = make_app(scripted_source, interval=30.0)
    async with app.run_test(size=(120, 40)) as pilot:
        await ready_table(pilot, app, rows=1)
        details = str(app.dashboard.query_one("#details").render())
        assert "exited" in details and "another PID namespace" not in details
        await pilot.press("enter")
        assert isinstance(app.screen, ProcessScreen)
        await pilot.pause()
        text = "\n".join(screen_lines(app))
        assert "it has exited" in text and "another PID namespace" not in text


async def test_unavailable_process_list_is_said_not_empty(
    scripted_source: Any, snapshot_factory: Any, device_factory: Any
) -> None:
    blind = replace(device_factory(1), unsupported=frozenset({PROCESS_LIST}))
    snap = snapshot_factory(n_gpus=2, devices=(device_factory(0), blind), processes=())
    scripted_source.next_snapshot = snap
    app = make_app(scripted_source, interval=30.0)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.latest_snapshot is not None)
        await pilot.pause()
        text = "\n".join(screen_lines(app))
        assert "GPU 1: the process list is not available on this GPU" in text
    table = render(snap)
    assert "process list not available on this GPU" in table.split("[1]")[1]
    assert "no running processes" in table.split("[1]")[0]  # GPU 0 is simply idle


async def test_process_details_dialog_is_live(
    scripted_source: Any, snapshot_factory: Any, process_factory: Any
) -> None:
    proc = process_factory(0, 1001, cpu_percent=12.5, gpu_memory=8 * GIB)
    scripted_source.next_snapshot = snapshot_factory(processes=(proc,))
    app = make_app(scripted_source, interval=0.05)
    async with app.run_test(size=(120, 40)) as pilot:
        await ready_table(pilot, app, rows=1)
        await pilot.press("enter")
        assert isinstance(app.screen, ProcessScreen)
        assert "12.5%" in "\n".join(screen_lines(app))
        scripted_source.next_snapshot = snapshot_factory(
            timestamp=1_700_000_001.0, processes=(replace(proc, cpu_percent=77.0),)
        )
        await wait_for(pilot, lambda: "77.0%" in "\n".join(screen_lines(app)))
        scripted_source.next_snapshot = snapshot_factory(timestamp=1_700_000_002.0, processes=())
        await wait_for(pilot, lambda: "no longer listed" in "\n".join(screen_lines(app)))


def test_snapshot_lists_processes_by_gpu_memory(
    snapshot_factory: Any, process_factory: Any
) -> None:
    procs = (
        process_factory(0, 11, gpu_memory=1 * GIB),
        process_factory(0, 12, gpu_memory=None),
        process_factory(0, 13, gpu_memory=9 * GIB),
        process_factory(0, 14, gpu_memory=3 * GIB),
    )
    text = render(snapshot_factory(n_gpus=1, processes=procs))
    positions = [text.index(f"    {pid:>7}  ") for pid in ("13", "14", "11", "12")]
    assert positions == sorted(positions)
