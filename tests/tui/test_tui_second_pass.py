"""Issue 11, "wrong today": each item as a user meets it in the dashboard (Pilot).

Items 1 and 3 (the Fit screen) are in test_tui_fit.py; the NVML side of item 6
(a NotSupported process list) is in tests/telemetry_nvml/test_nvml_process_list_na.py.
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from rich.color import ColorSystem
from textual.pilot import Pilot

from gputui.model.snapshot import PROCESS_LIST, DeviceSnapshot
from gputui.render.snapshot_text import render
from gputui.tui.app import GpuTuiApp
from gputui.tui.screens.fit import FitScreen
from gputui.tui.screens.help import HelpScreen
from gputui.tui.screens.process import ProcessScreen
from gputui.tui.widgets.gpu_panel import GpuPanel
from gputui.tui.widgets.process_table import COLUMNS, ProcessTable
from tests.waiting import wait_for

GIB = 1024**3
ROOT = Path(__file__).resolve().parents[2]


def make_app(source: Any, **kw: Any) -> GpuTuiApp:
    kw.setdefault("interval", 0.05)
    kw.setdefault("clock", lambda: "01:02:03")
    kw.setdefault("hostname", "testhost")
    kw.setdefault("card_lookup", None)
    return GpuTuiApp(source, **kw)


def screen_lines(app: GpuTuiApp) -> list[str]:
    return [strip.text for strip in app.screen._compositor.render_strips()]


def header_line(app: GpuTuiApp) -> str:
    """The process table's header row as drawn (the first table line holding "PID")."""
    table = app.dashboard.query_one(ProcessTable)
    lines = screen_lines(app)[table.region.y : table.region.bottom]
    return next(line for line in lines if "PID" in line)


async def _ready(pilot: Pilot[Any], app: GpuTuiApp, rows: int = 3) -> ProcessTable:
    await wait_for(pilot, lambda: app.latest_snapshot is not None)
    table = app.dashboard.query_one(ProcessTable)
    await wait_for(pilot, lambda: table.row_count == rows)
    await pilot.pause()
    return table


# -- item 4: every column shows the sort arrow ------------------------------------------------


@pytest.mark.parametrize("width", [120, 200])
async def test_sort_indicator_on_every_column(scripted_source: Any, width: int) -> None:
    app = make_app(scripted_source, interval=30.0)
    async with app.run_test(size=(width, 40)) as pilot:
        table = await _ready(pilot, app)
        seen = []
        for _ in range(len(table.shown)):
            await pilot.press("s")
            await pilot.pause()
            column = next(c for c in COLUMNS if c.key == table.sort_column)
            arrow = "▼" if table.sort_reverse else "▲"
            assert f"{column.label} {arrow}" in header_line(app), (column.key, header_line(app))
            seen.append(column.key)
        assert {c.key for c in table.shown} == set(seen)


# -- item 5: columns give way by priority; the command stays -----------------------------------


@pytest.mark.parametrize(
    ("width", "hidden"),
    [
        (80, {"Container", "Host mem", "Time"}),
        (100, {"Container", "Host mem"}),
        # Issue 21: the command takes its share (COMMAND_SHARE) before Container and Host mem.
        (120, {"Container", "Host mem"}),
        (200, set()),
    ],
)
async def test_narrow_terminals_keep_the_command(
    scripted_source: Any, width: int, hidden: set[str]
) -> None:
    app = make_app(scripted_source, interval=30.0)
    async with app.run_test(size=(width, 24)) as pilot:
        await _ready(pilot, app)
        header = header_line(app)
        assert "Command" in header and "PID" in header and "GPU mem" in header
        for label in hidden:
            assert label not in header, header
        if width >= 200:
            assert all(c.label in header for c in COLUMNS), header
        text = "\n".join(screen_lines(app))
        assert "python train.py" in text  # the command itself, abbreviated if need be
        assert len(header.rstrip()) <= width


async def test_fit_verdicts_visible_at_80_columns(scripted_source: Any) -> None:
    app = make_app(scripted_source, interval=30.0, models_path=ROOT / "examples" / "models.toml")
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.latest_snapshot is not None)
        await pilot.press("f")
        screen = app.screen
        assert isinstance(screen, FitScreen)
        await wait_for(pilot, lambda: bool(screen.checks) and not screen.busy)
        await pilot.pause()
        lines = screen_lines(app)
        table = screen.query_one("#fit-table")
        header = lines[table.region.y]
        assert "Now" in header and "Total" in header, header
        body = "\n".join(lines[table.region.y + 1 : table.region.bottom])
        assert "fits" in body or "does not fit" in body or "tight" in body


# -- item 6: exited processes and unavailable process lists say so ------------------------------


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
        await _ready(pilot, app, rows=1)
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


# -- item 8: no warning colour at normal load with 16 colours ---------------------------------

WARNING_16 = {1, 3, 9, 11}  # red, yellow, bright red, bright yellow


async def test_sparklines_are_not_a_warning_colour_in_16_colours(scripted_source: Any) -> None:
    app = make_app(scripted_source, interval=30.0)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.latest_snapshot is not None)
        panel = app.dashboard.query_one("#gpu-0", GpuPanel)
        for part in ("gpu-panel--spark", "gpu-panel--bar"):
            color = panel.get_component_rich_style(part).color
            assert color is not None
            assert color.downgrade(ColorSystem.STANDARD).number not in WARNING_16, part
        host = app.dashboard.query_one("#host")
        cores = host.get_component_rich_style("host-panel--cores").color
        assert cores is not None and cores.downgrade(ColorSystem.STANDARD).number not in WARNING_16
        hot = panel.get_component_rich_style("gpu-panel--bar-hot").color
        assert hot is not None and hot.downgrade(ColorSystem.STANDARD).number in WARNING_16


# -- item 9: one N/A per field; compact sizes keep their decimals -------------------------------


async def test_unsupported_fields_and_compact_memory(
    scripted_source: Any, snapshot_factory: Any, device_factory: Any
) -> None:
    blind = device_factory(
        0,
        used_gib=None,
        memory_total=None,
        temperature_c=None,
        power_w=None,
        power_limit_w=None,
        pcie_rx_kbs=None,
        pcie_tx_kbs=None,
        performance_state=None,
    )
    blind = replace(blind, info=replace(blind.info, memory_total=None, power_limit_w=None))
    odd = device_factory(1, used_gib=10.0, memory_total=round(79.65 * GIB))
    odd = replace(odd, info=replace(odd.info, memory_total=round(79.65 * GIB)))
    devices: tuple[DeviceSnapshot, ...] = (blind, odd, device_factory(2), device_factory(3))
    scripted_source.next_snapshot = snapshot_factory(n_gpus=4, devices=devices)
    app = make_app(scripted_source, interval=30.0)
    async with app.run_test(size=(160, 40)) as pilot:
        await wait_for(pilot, lambda: app.latest_snapshot is not None)
        await pilot.pause()
        p0 = app.dashboard.query_one("#gpu-0", GpuPanel)
        p1 = app.dashboard.query_one("#gpu-1", GpuPanel)
        assert p0.has_class("compact")
        shown = p0.render().plain
        assert "N/A/N/A" not in shown and "N/A°C" not in shown and "N/AG" not in shown
        assert "temp N/A" in shown and "power N/A" in shown and "PCIe N/A" in shown
        assert p0.mem_value(True) == "N/A"
        assert p1.mem_value(True) in ("10.0/79.6G", "10.0/79.7G")  # not an 80 GiB card's 80G
        p2 = app.dashboard.query_one("#gpu-2", GpuPanel)
        assert p2.mem_value(True).endswith("/24G")


# -- item 10 ----------------------------------------------------------------------------------


async def test_home_and_end_move_the_selection(scripted_source: Any) -> None:
    app = make_app(scripted_source, interval=30.0)
    async with app.run_test(size=(120, 40)) as pilot:
        table = await _ready(pilot, app)
        await pilot.press("end")
        assert table.cursor_row == table.row_count - 1
        await pilot.press("home")
        assert table.cursor_row == 0


async def test_q_on_the_help_screen_quits(scripted_source: Any) -> None:
    app = make_app(scripted_source, interval=30.0)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.latest_snapshot is not None)
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("q")
        await wait_for(pilot, lambda: app._exit, timeout=3)


async def test_header_clock_ticks_between_slow_polls(scripted_source: Any) -> None:
    ticks = iter(f"00:00:{i:02d}" for i in range(60))
    app = make_app(scripted_source, interval=30.0, clock=lambda: next(ticks))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.latest_snapshot is not None)
        info = app.dashboard.query_one("#info")
        first = str(info.render())
        await wait_for(pilot, lambda: str(info.render()) != first, timeout=3)
        assert scripted_source.polls == 1  # no poll did it


async def test_process_details_dialog_is_live(
    scripted_source: Any, snapshot_factory: Any, process_factory: Any
) -> None:
    proc = process_factory(0, 1001, cpu_percent=12.5, gpu_memory=8 * GIB)
    scripted_source.next_snapshot = snapshot_factory(processes=(proc,))
    app = make_app(scripted_source, interval=0.05)
    async with app.run_test(size=(120, 40)) as pilot:
        await _ready(pilot, app, rows=1)
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
