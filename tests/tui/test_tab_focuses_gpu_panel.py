"""The first tab from the process table goes to the first GPU panel (not
the invisible container around the panels), so `tab` `enter` opens its details."""

from __future__ import annotations

from demo_driving import app_for, ready

from gputui.tui.screens.device import DeviceScreen
from gputui.tui.widgets.gpu_panel import GpuPanel
from gputui.tui.widgets.process_table import ProcessTable
from tests.waiting import wait_for


async def test_tab_then_enter_opens_the_first_gpu() -> None:
    app = app_for(None)
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(pilot, fit=False)
        assert isinstance(app.focused, ProcessTable)
        await pilot.press("tab")
        await pilot.pause(0.05)
        assert isinstance(app.focused, GpuPanel) and app.focused.index == 0
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, DeviceScreen))
