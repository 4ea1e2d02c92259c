"""SVG snapshots of the process views: the tree, and the kill dialog for tagged processes.

Regenerate with `pytest tests/tui/test_tui_procs_snapshots.py --snapshot-update`, and look.
"""

from __future__ import annotations

from typing import Any

from textual.pilot import Pilot

from gputui.tui.screens.kill import KillScreen
from gputui.tui.widgets.fit_line import FitLine
from gputui.tui.widgets.process_table import ProcessTable

from .conftest import ScriptedSource
from .test_tui_pilot import make_app
from .test_tui_procs import PARENTS, Parents, job_snapshot
from .test_tui_snapshots import app_for, ready


async def _settled(pilot: Pilot[Any]) -> None:
    fit = pilot.app.query_one(FitLine)
    for _ in range(1500):  # the fit line's first estimate pass, as the dashboard snapshots
        if fit.passes:
            break
        await pilot.pause(0.02)
    table = pilot.app.query_one(ProcessTable)
    for _ in range(250):
        await pilot.pause(0.02)
        if table.settled:
            break
    await pilot.pause(0.1)


def test_tree_view(snap_compare: Any) -> None:
    async def tree(pilot: Pilot[Any]) -> None:
        table = pilot.app.query_one(ProcessTable)
        for _ in range(250):
            if table.row_count == 3:
                break
            await pilot.pause(0.02)
        await pilot.press("t")
        for _ in range(250):
            if table.row_count == 5:
                break
            await pilot.pause(0.02)
        await _settled(pilot)

    app = make_app(ScriptedSource(job_snapshot()), parents_of=Parents(PARENTS), interval=3600)
    assert snap_compare(app, terminal_size=(120, 40), run_before=tree)


def test_kill_dialog_for_tagged_processes(snap_compare: Any) -> None:
    async def tagged(pilot: Pilot[Any]) -> None:
        await ready(pilot)
        await pilot.press("space", "space", "space")
        await _settled(pilot)
        await pilot.press("k")
        app = pilot.app
        for _ in range(250):
            focused = app.screen.focused
            if isinstance(app.screen, KillScreen) and focused is not None and focused.id == "term":
                break
            await pilot.pause(0.02)
        assert isinstance(app.screen, KillScreen) and len(app.screen.procs) == 3
        await pilot.pause(0.1)

    assert snap_compare(app_for(), terminal_size=(120, 40), run_before=tagged)
