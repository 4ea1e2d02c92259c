"""A process in a MIG instance reads `0:1` (GPU : GPU instance, as in
nvitop) in the GPU column, and the details name the instance (profile, GI / CI)."""

from __future__ import annotations

import os

from demo_driving import app_for, ready
from textual.widgets import Static

from gputui.tui.screens.process import ProcessScreen, process_facts
from gputui.tui.widgets.field import Field
from gputui.tui.widgets.process_table import ProcessTable
from tests.waiting import wait_for


async def test_gpu_column_and_details_name_the_mig_instance() -> None:
    app = app_for("mig.toml")
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(pilot, fit=False)
        table = app.dashboard.query_one(ProcessTable)
        snap = app.latest_snapshot
        assert snap is not None
        in_mig = [p for p in snap.processes if p.gpu_instance_id is not None]
        assert in_mig
        proc = in_mig[0]
        key = f"{proc.gpu_index}:{proc.pid}"
        assert table.row_text(key)[0] == f"{proc.gpu_index}:{proc.gpu_instance_id}"
        dev = next(d for d in snap.devices if d.index == proc.gpu_index)
        mig = dev.mig_device(proc.gpu_instance_id)
        assert mig is not None and mig.profile
        table.move_cursor(row=table.visible_keys().index(key))
        await pilot.pause(0.05)
        details = _plain(app.dashboard.query_one("#details", Field).content)
        assert f"MIG {mig.profile}, GI {proc.gpu_instance_id} / CI" in details
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, ProcessScreen))
        screen = app.screen
        assert isinstance(screen, ProcessScreen)
        facts = dict(process_facts(screen.proc, instance=None))
        assert "MIG instance" not in facts  # the dialog adds it from the devices:
        shown = _plain(screen.query_one("#process-facts", Static).content)
        assert "MIG instance" in shown and f"{mig.profile}, GI {proc.gpu_instance_id}" in shown


def _plain(renderable: object) -> str:
    from rich.console import Console

    console = Console(width=200, record=True, file=open(os.devnull, "w"))  # noqa: SIM115
    console.print(renderable)
    return console.export_text()
