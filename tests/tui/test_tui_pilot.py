"""Driving the dashboard headless with Textual's Pilot.

Expected values come from the Snapshot the source handed out (or from the
test's own hand-built snapshot), never from the widgets' previous output.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import psutil
import pytest
from textual.geometry import Region
from textual.pilot import Pilot
from textual.widgets import Input, Static

from gputui.model.snapshot import DeviceSnapshot, GpuProcess, Snapshot
from gputui.sources.simulated.source import SimulatedSource
from gputui.tui.app import GpuTuiApp
from gputui.tui.screens.help import HelpScreen
from gputui.tui.screens.kill import KillScreen
from gputui.tui.views.kill import Identity, KillPolicy
from gputui.tui.widgets.gpu_panel import GpuPanel
from gputui.tui.widgets.process_table import ProcessTable
from tests.waiting import wait_for

from .conftest import make_app

GIB = 1024**3


def plain(widget: Static) -> str:
    """What a Static shows, as plain text."""
    return str(widget.render())


def panel_texts(app: GpuTuiApp, index: int) -> tuple[str, str, str]:
    """(utilization, memory, stats) as the panel draws them."""
    panel = app.dashboard.query_one(f"#gpu-{index}", GpuPanel)
    rendered = panel.render().plain
    util, mem = panel.util_value(), panel.mem_value(panel.has_class("compact"))
    stats = panel.stats_text()
    # What the getters return is what is on screen.
    assert util in rendered and mem in rendered and stats.split("\n")[0][:20] in rendered
    return util, mem, stats


# -- what is on screen ------------------------------------------------------------------------


async def test_startup_on_simulated_source_shows_the_snapshot_values() -> None:
    source = SimulatedSource.from_scenario(None, clock=lambda: 300.0)
    expected = source.snapshot_at(300.0)
    app = make_app(source, interval=3600)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.latest_snapshot is not None)
        await pilot.pause()
        assert app.latest_snapshot == expected
        for dev in expected.devices:
            util, mem, stats = panel_texts(app, dev.index)
            s = dev.sample
            assert s is not None
            assert util.split() == (
                [str(s.utilization_gpu), "%"] if s.utilization_gpu is not None else ["N/A"]
            )
            assert mem.split()[0] == f"{s.memory_used / GIB:.1f}"  # type: ignore[operator]
            assert f"{s.temperature_c}°C" in stats
            assert (f"P{s.performance_state}" in stats) == (s.performance_state is not None)
        table = app.dashboard.query_one(ProcessTable)
        shown = {(p.gpu_index, p.pid) for p in table.processes.values()}
        assert shown == {(p.gpu_index, p.pid) for p in expected.processes}
        assert table.row_count == len(expected.processes)
        header = plain(app.dashboard.query_one("#info", Static))
        assert "testhost" in header and "01:02:03" in header
        assert str(expected.driver_version) in header
        banner = app.dashboard.query_one("#banner", Static)
        assert "SIMULATED" in plain(banner) and not banner.has_class("hidden")


async def test_fallback_reason_is_in_the_banner(scripted_source: Any) -> None:
    app = make_app(scripted_source, fallback_reason="NVML Shared Library Not Found")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.latest_snapshot is not None)
        assert "NVML Shared Library Not Found" in plain(app.dashboard.query_one("#banner", Static))


async def test_nvml_source_has_no_banner(scripted_source: Any, snapshot_factory: Any) -> None:
    scripted_source.name = "nvml"
    scripted_source.next_snapshot = snapshot_factory(source="nvml")
    app = make_app(scripted_source)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.latest_snapshot is not None)
        await pilot.pause()
        assert app.dashboard.query_one("#banner", Static).has_class("hidden")


async def test_unsupported_values_read_na_never_zero(
    scripted_source: Any, snapshot_factory: Any, device_factory: Any
) -> None:
    dev = device_factory(
        0,
        util=None,
        used_gib=None,
        temperature_c=None,
        fan_pct=None,
        power_w=None,
        sm_clock_mhz=None,
    )
    scripted_source.next_snapshot = snapshot_factory(n_gpus=1, devices=(dev,))
    app = make_app(scripted_source)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.latest_snapshot is not None)
        await pilot.pause()
        util, mem, stats = panel_texts(app, 0)
        assert util.strip() == "N/A"
        assert mem.split()[0] == "N/A"
        assert "temp N/A" in stats and "fan N/A" in stats and "SM N/A" in stats
        assert "power N/A (limit 350 W)" in stats
        assert "N/A°C" not in stats and "N/A/" not in stats  # one N/A per field, labelled
        assert "0 %" not in util and " 0°C" not in stats


async def test_lost_gpu_shows_failed_while_others_keep_moving(
    scripted_source: Any, snapshot_factory: Any, device_factory: Any
) -> None:
    app = make_app(scripted_source)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.latest_snapshot is not None)
        lost = DeviceSnapshot(info=device_factory(1).info, sample=None, failed="GPU is lost")
        scripted_source.next_snapshot = snapshot_factory(devices=(device_factory(0, util=77), lost))
        await wait_for(pilot, lambda: "77" in panel_texts(app, 0)[0])
        panel1 = app.dashboard.query_one("#gpu-1", GpuPanel)
        assert panel1.has_class("failed")
        assert "GPU is lost" in panel_texts(app, 1)[2]
        scripted_source.next_snapshot = snapshot_factory(devices=(device_factory(0, util=33), lost))
        await wait_for(pilot, lambda: "33" in panel_texts(app, 0)[0])
        assert panel1.has_class("failed")


async def test_throttle_and_ecc_shown_only_when_present(
    scripted_source: Any, snapshot_factory: Any, device_factory: Any
) -> None:
    devs = (
        device_factory(0),
        device_factory(1, throttle_reasons=("hw_slowdown",), ecc_volatile_uncorrected=3),
    )
    scripted_source.next_snapshot = snapshot_factory(devices=devs)
    app = make_app(scripted_source)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.latest_snapshot is not None)
        await pilot.pause()
        assert "throttle" not in panel_texts(app, 0)[2] and "ECC" not in panel_texts(app, 0)[2]
        stats1 = panel_texts(app, 1)[2]
        assert "throttle: hw_slowdown" in stats1 and "ECC errors: 3" in stats1


@pytest.mark.parametrize(
    ("n_gpus", "size", "compact"),
    [(2, (120, 40), False), (8, (120, 40), True), (2, (80, 24), True)],
)
async def test_compact_layout_for_many_gpus_or_short_screens(
    scripted_source: Any, snapshot_factory: Any, n_gpus: int, size: tuple[int, int], compact: bool
) -> None:
    scripted_source.next_snapshot = snapshot_factory(n_gpus=n_gpus)
    app = make_app(scripted_source)
    async with app.run_test(size=size) as pilot:
        await wait_for(pilot, lambda: app.latest_snapshot is not None)
        await pilot.pause()
        panels = list(app.dashboard.query(GpuPanel))
        assert len(panels) == n_gpus
        assert all(p.has_class("compact") == compact for p in panels)
        if n_gpus == 8:
            # 8 GPUs fit on 120x40 without scrolling the GPU area.
            assert all(p.region.height == 2 for p in panels)
            gpus = app.dashboard.query_one("#gpus")
            assert gpus.max_scroll_y == 0


# -- process table ----------------------------------------------------------------------------


@asynccontextmanager
async def process_table(app: GpuTuiApp) -> AsyncIterator[tuple[Pilot[Any], ProcessTable]]:
    """The dashboard after its first poll, the fixture's three processes in the table."""
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.latest_snapshot is not None)
        table = app.dashboard.query_one(ProcessTable)
        await wait_for(pilot, lambda: table.row_count == 3)
        yield pilot, table


async def test_sort_cycle_and_reverse(scripted_source: Any) -> None:
    app = make_app(scripted_source)
    async with process_table(app) as (pilot, table):
        # Default: GPU memory, largest first (8, 5, 2 GiB in the fixture).
        assert table.visible_keys() == ["0:1001", "1:1003", "0:1002"]
        # s steps through the columns on screen (at 120 columns Container and
        # Host mem give way to the command), wrapping round to GPU.
        keys = [c.key for c in table.shown]
        start = keys.index("gpu_mem")
        await pilot.press("s")
        assert table.sort_column == keys[start + 1]
        await pilot.press(*["s"] * (len(keys) - start - 1))
        assert table.sort_column == "gpu"
        assert not table.sort_reverse
        assert [k.split(":")[0] for k in table.visible_keys()] == ["0", "0", "1"]
        await pilot.press("r")
        assert table.sort_reverse
        assert table.visible_keys()[0] == "1:1003"


async def test_sort_by_user_and_header_click(scripted_source: Any) -> None:
    app = make_app(scripted_source)
    async with process_table(app) as (pilot, table):
        table.set_sort("user")
        await pilot.pause()
        users = [table.processes[k].user for k in table.visible_keys()]
        assert users == ["alice", "bob", "carol"]
        # Click the "PID" header: the header row is the table's first content line.
        pid_x = sum(col.get_render_width(table) for col in list(table.columns.values())[:1]) + 2
        await pilot.click(ProcessTable, offset=(pid_x, 1))
        await pilot.pause()
        assert table.sort_column == "pid"
        assert [table.processes[k].pid for k in table.visible_keys()] == [1001, 1002, 1003]


async def test_filter_by_text(scripted_source: Any) -> None:
    app = make_app(scripted_source)
    async with process_table(app) as (pilot, table):
        await pilot.press("slash")
        assert isinstance(app.focused, Input)
        await pilot.press("b", "o", "b")
        assert table.visible_keys() == ["0:1002"]
        await pilot.press("enter")
        assert app.focused is table
        # The filter stays applied across polls.
        polls = scripted_source.polls
        await wait_for(pilot, lambda: scripted_source.polls > polls + 1)
        assert table.visible_keys() == ["0:1002"]
        await pilot.press("slash", "escape")
        assert table.row_count == 3


async def test_cursor_stays_on_selected_process_as_rows_come_and_go(
    scripted_source: Any, snapshot_factory: Any, process_factory: Any
) -> None:
    app = make_app(scripted_source)
    async with process_table(app) as (pilot, table):
        await pilot.press("down", "down")
        selected = table.selected
        assert selected is not None and selected.pid == 1002
        # A bigger process appears (sorts first), another one leaves.
        procs = (
            process_factory(0, 2000, gpu_memory=20 * GIB),
            process_factory(0, 1002, gpu_memory=2 * GIB, user="bob", type="graphics"),
            process_factory(1, 1003, gpu_memory=5 * GIB, user="carol"),
        )
        scripted_source.next_snapshot = snapshot_factory(processes=procs)
        await wait_for(pilot, lambda: "0:2000" in table.processes)
        assert table.visible_keys() == ["0:2000", "1:1003", "0:1002"]
        assert table.selected is not None and table.selected.pid == 1002
        details = plain(app.dashboard.query_one("#details", Static))
        assert "PID 1002" in details


async def test_process_values_update_in_place(
    scripted_source: Any, snapshot_factory: Any, process_factory: Any
) -> None:
    app = make_app(scripted_source)
    async with process_table(app) as (pilot, table):
        snap = scripted_source.next_snapshot
        changed = replace(snap.processes[0], cpu_percent=99.0)
        scripted_source.next_snapshot = replace(snap, processes=(changed, *snap.processes[1:]))
        await wait_for(pilot, lambda: str(table.get_cell("0:1001", "cpu")) == "99")

        def drawn_row(pid: str) -> str:
            await_lines = table.render_lines(Region(0, 0, table.size.width, table.size.height))
            return next(strip.text for strip in await_lines if f" {pid} " in strip.text)

        # What is drawn follows the data: the cell cache is keyed by cell text. The CPU
        # column's word: its place among the shown columns, GPU mem being two ("1.0 GiB").
        cpu = [c.key for c in table.shown].index("cpu") + 1
        await wait_for(pilot, lambda: drawn_row("1001").split()[cpu] == "99")
        assert drawn_row("1002").split()[cpu] == "12"


# -- polling controls -------------------------------------------------------------------------


async def test_pause_stops_polling_and_resume_restarts(
    scripted_source: Any, snapshot_factory: Any
) -> None:
    app = make_app(scripted_source)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: scripted_source.polls >= 2)
        await pilot.press("p")
        assert app.paused
        await wait_for(pilot, lambda: not app.poll_in_flight)
        polls = scripted_source.polls
        await pilot.pause(0.3)  # six intervals
        assert scripted_source.polls == polls
        assert "PAUSED" in plain(app.dashboard.query_one("#info", Static))
        await pilot.press("p")
        await wait_for(pilot, lambda: scripted_source.polls > polls)
        assert "PAUSED" not in plain(app.dashboard.query_one("#info", Static))


async def test_interval_keys_step_through_the_ladder(scripted_source: Any) -> None:
    app = make_app(scripted_source, interval=1.0)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.latest_snapshot is not None)
        await pilot.press("minus")
        assert app.interval == 2.0
        await pilot.press("plus", "plus")
        assert app.interval == 0.5
        assert "every 0.5 s" in plain(app.dashboard.query_one("#info", Static))
        for _ in range(10):
            await pilot.press("plus")
        assert app.interval == 0.25  # the floor
        # The new pace is used: polls now arrive at least every 0.25 s.
        polls = scripted_source.polls
        await wait_for(pilot, lambda: scripted_source.polls >= polls + 2)


async def test_source_that_raises_is_shown_and_polling_recovers(scripted_source: Any) -> None:
    app = make_app(scripted_source)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.latest_snapshot is not None)
        scripted_source.error = RuntimeError("NVML: GPU is lost")
        status = app.dashboard.query_one("#status", Static)
        await wait_for(
            pilot, lambda: "GPU is lost" in plain(status) and not status.has_class("hidden")
        )
        assert app.is_running
        failed_polls = scripted_source.polls
        await wait_for(pilot, lambda: scripted_source.polls > failed_polls + 1)  # still polling
        scripted_source.error = None
        await wait_for(pilot, lambda: status.has_class("hidden"))
        assert app.last_error is None and app.is_running


async def test_source_that_blocks_does_not_freeze_input(scripted_source: Any) -> None:
    gate = threading.Event()
    app = make_app(scripted_source)
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_for(pilot, lambda: app.latest_snapshot is not None)
            scripted_source.gate = gate
            scripted_source.entered.clear()
            await wait_for(pilot, lambda: scripted_source.entered.is_set() and app.poll_in_flight)
            polls = scripted_source.polls
            await pilot.press("question_mark")
            assert isinstance(app.screen, HelpScreen)
            await pilot.press("escape")
            await pilot.press("s")
            assert app.dashboard.query_one(ProcessTable).sort_column == "sm"
            await pilot.press("minus")
            assert app.interval == 0.25
            await pilot.pause(0.3)
            assert scripted_source.polls == polls  # no second poll piled up behind the hung one
            scripted_source.gate = None
            gate.set()
            await wait_for(pilot, lambda: scripted_source.polls > polls)
    finally:
        gate.set()


# -- kill -------------------------------------------------------------------------------------


@pytest.fixture
def sleeper() -> Any:
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    yield proc
    if proc.poll() is None:
        proc.kill()
    proc.wait(timeout=10)


def _me() -> str:
    import pwd

    return pwd.getpwuid(os.getuid()).pw_name


def _listed(popen: Any, process_factory: Any, **kw: Any) -> tuple[GpuProcess, float]:
    """A live child as a poll lists it: its real start time implied by running_s."""
    now = time.time()
    kw.setdefault("user", _me())
    kw.setdefault("running_s", now - psutil.Process(popen.pid).create_time())
    return process_factory(0, popen.pid, **kw), now


async def _select_pid(pilot: Pilot[Any], app: GpuTuiApp, pid: int) -> None:
    table = app.dashboard.query_one(ProcessTable)
    await wait_for(pilot, lambda: any(p.pid == pid for p in table.processes.values()))
    for _ in range(table.row_count):
        sel = table.selected
        if sel is not None and sel.pid == pid:
            return
        await pilot.press("down")
    raise AssertionError(f"PID {pid} not reachable")


@asynccontextmanager
async def kill_pressed_on(app: GpuTuiApp, pid: int) -> AsyncIterator[Pilot[Any]]:
    """The dashboard running, `pid` selected with the arrow keys, then `k` pressed."""
    async with app.run_test(size=(120, 40)) as pilot:
        await _select_pid(pilot, app, pid)
        await pilot.press("k")
        yield pilot


@pytest.fixture
def listed_sleeper(
    scripted_source: Any, snapshot_factory: Any, process_factory: Any, sleeper: Any
) -> Any:
    """The sleeper child, listed on GPU 0 by every poll of the NVML-like source."""
    target, now = _listed(sleeper, process_factory)
    scripted_source.next_snapshot = snapshot_factory(
        source="nvml", timestamp=now, processes=(target,)
    )
    return sleeper


async def test_kill_confirmed_sends_sigterm_to_the_selected_process(
    scripted_source: Any, snapshot_factory: Any, process_factory: Any, sleeper: Any
) -> None:
    me = _me()
    target, now = _listed(sleeper, process_factory, cmdline=("python", "-c", "sleep"))
    scripted_source.next_snapshot = snapshot_factory(
        source="nvml", timestamp=now, processes=(target, process_factory(1, 1003))
    )
    app = make_app(scripted_source)
    async with kill_pressed_on(app, sleeper.pid) as pilot:
        assert isinstance(app.screen, KillScreen)
        dialog = plain(app.screen.query_one("#kill-details", Static))
        title = str(app.screen.query_one("#kill-title").render())
        assert str(sleeper.pid) in title and me in dialog and "python -c sleep" in dialog
        await pilot.press("enter")  # focus starts on SIGTERM
        assert sleeper.wait(timeout=10) == -signal.SIGTERM
        assert not isinstance(app.screen, KillScreen)


async def test_kill_sigkill_is_an_explicit_choice(
    scripted_source: Any, listed_sleeper: Any
) -> None:
    async with kill_pressed_on(make_app(scripted_source), listed_sleeper.pid) as pilot:
        await pilot.click("#kill")
        assert listed_sleeper.wait(timeout=10) == -signal.SIGKILL


async def test_kill_cancel_leaves_the_process_alone(
    scripted_source: Any, listed_sleeper: Any
) -> None:
    app = make_app(scripted_source)
    async with kill_pressed_on(app, listed_sleeper.pid) as pilot:
        assert isinstance(app.screen, KillScreen)
        await pilot.press("escape")
        assert not isinstance(app.screen, KillScreen)
        await pilot.pause(0.2)
        assert listed_sleeper.poll() is None


def _spawn_on_pid(pid: int, attempts: int = 50) -> subprocess.Popen[bytes] | None:
    """A new sleeper that gets `pid`, by setting the kernel's last PID (root only); None if not."""
    last_pid = Path("/proc/sys/kernel/ns_last_pid")
    for _ in range(attempts):
        try:
            last_pid.write_text(str(pid - 1))
        except OSError:
            return None
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        if child.pid == pid:
            return child
        child.kill()
        child.wait(timeout=10)
    return None


async def test_kill_refuses_when_the_pid_is_reused_while_the_dialog_is_open(
    scripted_source: Any, snapshot_factory: Any, process_factory: Any
) -> None:
    """The listed process exits and its PID goes to a new process before `enter`."""
    first = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    target, now = _listed(first, process_factory)
    scripted_source.next_snapshot = snapshot_factory(
        source="nvml", timestamp=now, processes=(target,)
    )
    app = make_app(scripted_source, interval=30.0)  # no poll refreshes the listing meanwhile
    second: subprocess.Popen[bytes] | None = None
    try:
        async with kill_pressed_on(app, first.pid) as pilot:
            assert isinstance(app.screen, KillScreen)
            first.kill()
            first.wait(timeout=10)  # reaped: the number is free
            await asyncio.sleep(0.05)
            second = _spawn_on_pid(first.pid)
            if second is None:
                pytest.skip("cannot force PID reuse here (needs root and a quiet PID space)")
            await asyncio.sleep(0.2)  # let it exec, so its start time is its own
            await pilot.press("enter")
            await pilot.pause(0.3)
            assert second.poll() is None, "the new process on the reused PID was signalled"
            messages = [n.message for n in app._notifications]
            assert any("no longer the process you confirmed" in m for m in messages), messages
    finally:
        for child in (first, second):
            if child is not None and child.poll() is None:
                child.kill()
                child.wait(timeout=10)


async def test_kill_of_another_users_process_is_refused_unless_root(
    scripted_source: Any, snapshot_factory: Any, process_factory: Any
) -> None:
    sent: list[tuple[int, int]] = []
    # Listed as bob's (user names come from outside); psutil says uid 1001 owns it.
    policy = KillPolicy(
        is_root=lambda: False,
        current_uid=lambda: 1000,
        name_of={1000: "alice", 1001: "bob"}.__getitem__,
        identify=lambda pid: Identity(pid, 1_700_000_000.0 - 125.0, 1001),
        send_signal=lambda p, s: sent.append((p, s)),
    )
    scripted_source.next_snapshot = snapshot_factory(
        source="nvml", processes=(process_factory(0, 4242, user="bob"),)
    )
    app = make_app(scripted_source, kill_policy=policy)
    async with kill_pressed_on(app, 4242) as pilot:
        await pilot.pause()
        assert not isinstance(app.screen, KillScreen)
        messages = [n.message for n in app._notifications]
        assert any("belongs to bob" in m for m in messages), messages
        assert sent == []


async def test_kill_of_a_process_that_exits_while_the_dialog_is_open_is_reported(
    scripted_source: Any, snapshot_factory: Any, process_factory: Any
) -> None:
    alive = {"yes": True}
    sent: list[tuple[int, int]] = []
    policy = KillPolicy(
        is_root=lambda: True,
        identify=lambda pid: Identity(pid, 1_700_000_000.0 - 125.0, 0) if alive["yes"] else None,
        send_signal=lambda p, s: sent.append((p, s)),
    )
    scripted_source.next_snapshot = snapshot_factory(
        source="nvml", processes=(process_factory(0, 4243, user="bob"),)
    )
    app = make_app(scripted_source, kill_policy=policy)
    async with kill_pressed_on(app, 4243) as pilot:
        assert isinstance(app.screen, KillScreen)
        alive["yes"] = False
        await pilot.press("enter")
        await pilot.pause()
        assert app.is_running and sent == []
        assert any("already exited" in n.message for n in app._notifications)


async def test_simulated_processes_are_never_signalled(
    scripted_source: Any, snapshot_factory: Any, process_factory: Any
) -> None:
    # Demo PIDs are made up; the same number may be a real process on this machine.
    sent: list[tuple[int, int]] = []
    policy = KillPolicy(is_root=lambda: True, send_signal=lambda p, s: sent.append((p, s)))
    scripted_source.next_snapshot = snapshot_factory(
        source="simulated", processes=(process_factory(0, 4244, user="root"),)
    )
    app = make_app(scripted_source, kill_policy=policy)
    async with kill_pressed_on(app, 4244) as pilot:
        await pilot.press("enter")
        await pilot.pause()
        assert not isinstance(app.screen, KillScreen)
        assert any("simulated" in n.message for n in app._notifications)
        assert sent == []


async def test_readonly_hides_and_disables_kill(
    scripted_source: Any, snapshot_factory: Any, process_factory: Any
) -> None:
    sent: list[tuple[int, int]] = []
    policy = KillPolicy(is_root=lambda: True, send_signal=lambda p, s: sent.append((p, s)))
    app = make_app(scripted_source, readonly=True, kill_policy=policy)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.dashboard.query_one(ProcessTable).row_count == 3)
        await pilot.press("k")
        await pilot.pause()
        assert not isinstance(app.screen, KillScreen)
        assert sent == []
        footer_keys = {b.binding.action for b in app.active_bindings.values() if b.enabled}
        assert "app.kill" not in footer_keys and "kill" not in footer_keys
        titles = [c.title for c in app.get_system_commands(app.screen)]
        assert "Kill process" not in titles


# -- screens, palette, resize, quit -------------------------------------------------------------


async def test_help_screen_lists_the_keys(scripted_source: Any) -> None:
    app = make_app(scripted_source)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        listed = {k for k, _ in app.screen.keys}
        assert {"q, ctrl+c", "p", "+ / -", "s", "/", "k", "?"} <= listed
        await pilot.press("escape")
        assert app.screen is app.dashboard


async def test_command_palette_offers_the_actions(scripted_source: Any) -> None:
    app = make_app(scripted_source)
    async with app.run_test(size=(120, 40)):
        # Titles end with their key: "Poll faster (+)"
        titles = {c.title.rsplit(" (", 1)[0] for c in app.get_system_commands(app.screen)}
        assert {
            "Pause / resume polling",
            "Poll faster",
            "Poll slower",
            "Cycle sort column",
            "Filter processes",
            "Kill process",
            "Help",
        } <= titles


async def test_active_screen_receives_each_snapshot(scripted_source: Any) -> None:
    from textual.screen import Screen

    class Follower(Screen[None]):
        def __init__(self) -> None:
            super().__init__()
            self.seen: list[Snapshot] = []

        def update_snapshot(self, snapshot: Snapshot) -> None:
            self.seen.append(snapshot)

    app = make_app(scripted_source)
    async with app.run_test(size=(120, 40)) as pilot:
        follower = Follower()
        await app.push_screen(follower)
        await wait_for(pilot, lambda: len(follower.seen) >= 2)
        assert follower.seen[-1] is app.latest_snapshot


async def test_covered_dashboard_is_not_redrawn_and_catches_up_on_return(
    scripted_source: Any,
) -> None:
    from textual.screen import Screen

    app = make_app(scripted_source)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.latest_snapshot is not None)
        await wait_for(pilot, lambda: panel_texts(app, 0)[0].strip().startswith("50"))
        await app.push_screen(Screen())
        snap = scripted_source.next_snapshot
        dev0 = snap.devices[0]
        assert dev0.sample is not None
        busier = replace(dev0, sample=replace(dev0.sample, utilization_gpu=87))
        scripted_source.next_snapshot = replace(snap, devices=(busier, *snap.devices[1:]))
        polls = app.poll_count
        await wait_for(pilot, lambda: app.poll_count >= polls + 3)
        # Covered by a full screen: the panel still shows the old value.
        assert panel_texts(app, 0)[0].strip().startswith("50")
        app.pop_screen()
        await wait_for(pilot, lambda: panel_texts(app, 0)[0].strip().startswith("87"))


async def test_resize_down_to_60x20_and_back(scripted_source: Any, snapshot_factory: Any) -> None:
    scripted_source.next_snapshot = snapshot_factory(n_gpus=8)
    app = make_app(scripted_source)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.latest_snapshot is not None)
        for size in [(80, 24), (60, 20), (40, 10), (200, 60), (60, 20)]:
            await pilot.resize_terminal(*size)
            polls = scripted_source.polls
            await wait_for(pilot, lambda p=polls: scripted_source.polls > p)  # type: ignore[misc]
            await pilot.pause()
            assert app.is_running
            assert app.size == size


@pytest.mark.parametrize("key", ["q", "ctrl+c"])
async def test_quit_keys_exit_cleanly(scripted_source: Any, key: str) -> None:
    app = make_app(scripted_source)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.latest_snapshot is not None)
        await pilot.press(key)
        await pilot.pause()
    assert app.return_value == 0


@pytest.mark.parametrize(
    ("key", "screen"), [("f", "gputui.tui.screens.fit"), ("c", "gputui.tui.screens.catalog")]
)
async def test_a_broken_screen_fails_loudly(
    scripted_source: Any, monkeypatch: pytest.MonkeyPatch, key: str, screen: str
) -> None:
    """A screen that cannot be imported ends the app with that ImportError; it never
    vanishes behind a "not available" notice."""
    monkeypatch.setitem(sys.modules, screen, None)  # importing it now raises ImportError
    app = make_app(scripted_source)
    with pytest.raises(ImportError, match=screen.replace(".", r"\.")):
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_for(pilot, lambda: app.latest_snapshot is not None)
            await pilot.press(key)
            await pilot.pause()
    assert not any("not available" in n.message for n in app._notifications)


async def test_notices_are_shown_once(scripted_source: Any, snapshot_factory: Any) -> None:
    scripted_source.next_snapshot = snapshot_factory(
        notices=("processes of other containers are hidden",)
    )
    app = make_app(scripted_source)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: scripted_source.polls >= 3)
        await pilot.pause()
        assert sum("other containers" in n.message for n in app._notifications) == 1


async def test_repeated_timestamp_adds_no_history_point(
    scripted_source: Any, snapshot_factory: Any
) -> None:
    app = make_app(scripted_source)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: scripted_source.polls >= 3 and not app.poll_in_flight)
        assert len(app.history.series(0, "utilization")) == 1
        scripted_source.next_snapshot = snapshot_factory(timestamp=1_700_000_001.0)
        await wait_for(pilot, lambda: len(app.history.series(0, "utilization")) == 2)


async def test_command_text_with_brackets_is_shown_literally(
    scripted_source: Any, snapshot_factory: Any, process_factory: Any
) -> None:
    odd = process_factory(0, 555, cmdline=("python", "-c", "print('[bold]x[/bold]')"))
    scripted_source.next_snapshot = snapshot_factory(processes=(odd,))
    app = make_app(scripted_source)
    async with app.run_test(size=(120, 40)) as pilot:
        table = app.dashboard.query_one(ProcessTable)
        await wait_for(pilot, lambda: table.row_count == 1)
        assert "[bold]x[/bold]" in str(table.get_cell("0:555", "command"))
        assert "[bold]x[/bold]" in plain(app.dashboard.query_one("#details", Static))


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        ("enter", signal.SIGTERM),
        ("t", signal.SIGTERM),
        ("K", signal.SIGKILL),
        ("escape", None),
        ("n", None),
    ],
)
async def test_kill_dialog_keys(key: str, expected: int | None) -> None:
    from textual.app import App

    results: list[int | None] = []

    class Host(App[None]):
        def on_mount(self) -> None:
            self.push_screen(
                KillScreen(GpuProcess(gpu_index=0, pid=5, type="compute")), results.append
            )

    async with Host().run_test() as pilot:
        await pilot.pause()
        await pilot.press(key)
        await pilot.pause()
    assert results == [expected]


async def test_enter_shows_the_full_command_line(
    scripted_source: Any, snapshot_factory: Any, process_factory: Any
) -> None:
    from gputui.tui.screens.process import ProcessScreen

    long_cmd = ("python", "train.py", *(f"--option-{i}=value-{i}" for i in range(30)))
    scripted_source.next_snapshot = snapshot_factory(
        processes=(process_factory(0, 777, cmdline=long_cmd),)
    )
    app = make_app(scripted_source)
    async with app.run_test(size=(80, 24)) as pilot:
        await _select_pid(pilot, app, 777)
        await pilot.press("enter")
        assert isinstance(app.screen, ProcessScreen)
        shown = plain(app.screen.query_one("#process-command", Static))
        assert shown == " ".join(long_cmd)  # unabridged, although far wider than the screen
        await pilot.press("escape")
        assert app.screen is app.dashboard
