"""The dashboard on a ScriptedSource (tests/tui/conftest.py), and what it draws: shared helpers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textual.pilot import Pilot

from gputui.tui.app import GpuTuiApp
from gputui.tui.widgets.process_table import ProcessTable
from tests.waiting import wait_for

from .conftest import make_app

__all__ = ["make_app"]  # the dashboard tests import it from here too

GIB = 1024**3


ROOT = Path(__file__).resolve().parents[2]


def screen_lines(app: GpuTuiApp) -> list[str]:
    return [strip.text for strip in app.screen._compositor.render_strips()]


def header_line(app: GpuTuiApp) -> str:
    """The process table's header row as drawn (the first table line holding "PID")."""
    table = app.dashboard.query_one(ProcessTable)
    lines = screen_lines(app)[table.region.y : table.region.bottom]
    return next(line for line in lines if "PID" in line)


async def ready_table(pilot: Pilot[Any], app: GpuTuiApp, rows: int = 3) -> ProcessTable:
    await wait_for(pilot, lambda: app.latest_snapshot is not None)
    table = app.dashboard.query_one(ProcessTable)
    await wait_for(pilot, lambda: table.row_count == rows)
    await pilot.pause()
    return table
