"""A process in a MIG device reads `0:2` (GPU index : MIG device index, as nvitop writes it)
in the GPU column, and the GPU panel, the details and the process dialog name that device the
same way, with its profile and GI / CI ids beside it. In the mig scenario the 1g.10gb device
is MIG device 2 but GPU instance 3: the two numbers differ, so a mix-up shows."""

from __future__ import annotations

import os

from demo_driving import app_for, ready
from textual.widgets import Static

from gputui.tui.screens.process import ProcessScreen, process_facts
from gputui.tui.widgets.field import Field
from gputui.tui.widgets.gpu_panel import GpuPanel
from gputui.tui.widgets.process_table import ProcessTable
from tests.waiting import wait_for


async def test_gpu_column_panel_and_details_use_one_mig_notation() -> None:
    app = app_for("mig.toml")
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(pilot, fit=False)
        table = app.dashboard.query_one(ProcessTable)
        snap = app.latest_snapshot
        assert snap is not None
        proc = next(p for p in snap.processes if p.pid == 41004)  # jupyter-lab, in 1g.10gb
        assert (proc.gpu_instance_id, proc.mig_index) == (3, 2)
        key = f"{proc.gpu_index}:{proc.pid}"
        assert table.row_text(key)[0] == "0:2"
        panel = app.dashboard.query_one("#gpu-0", GpuPanel)
        assert "MIG 0:2 1g.10gb  GI 3/CI 0" in panel.mig_text()
        table.move_cursor(row=table.visible_keys().index(key))
        await pilot.pause(0.05)
        details = _plain(app.dashboard.query_one("#details", Field).content)
        assert "on GPU 0 (MIG 0:2 1g.10gb, GI 3/CI 0)" in details
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, ProcessScreen))
        screen = app.screen
        assert isinstance(screen, ProcessScreen)
        facts = dict(process_facts(screen.proc, instance=None))
        assert "MIG instance" not in facts  # the dialog adds it from the devices:
        shown = _plain(screen.query_one("#process-facts", Static).content)
        assert "MIG instance" in shown and "0:2 1g.10gb, GI 3/CI 0" in shown


def _plain(renderable: object) -> str:
    from rich.console import Console

    console = Console(width=200, record=True, file=open(os.devnull, "w"))  # noqa: SIM115
    console.print(renderable)
    return console.export_text()
