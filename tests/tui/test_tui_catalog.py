"""The Catalog screen opened from the dashboard of a mixed, partly failed box.

The faults scenario: GPU 0 a GTX 1080 Ti, GPU 1 an A100 PCIe 40 GB that fell off the bus
at 30 s, GPU 2 an L4. The user tabs to a GPU on the dashboard and presses `c`.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from textual.pilot import Pilot
from textual.widgets import Static

from gputui.core.resources import scenarios_dir
from gputui.sources.simulated.source import SimulatedSource
from gputui.tui.app import GpuTuiApp
from gputui.tui.screens.catalog import CatalogScreen
from gputui.tui.widgets.gpu_panel import GpuPanel
from gputui.tui.widgets.process_table import ProcessTable
from tests.waiting import wait_for


def _text(widget: Static) -> str:
    console = Console(width=200, record=True, color_system=None)
    console.print(widget.render() if widget.id == "catalog-installed" else widget.content)
    return console.export_text()


def _app() -> GpuTuiApp:
    source = SimulatedSource.from_scenario(scenarios_dir() / "faults.toml", clock=lambda: 300.0)
    return GpuTuiApp(
        source, interval=3600, clock=lambda: "01:02:03", hostname="t", card_lookup=None
    )


async def _focus_gpu(pilot: Pilot[Any], app: GpuTuiApp, index: int) -> None:
    """Tab through the dashboard until GPU `index`'s panel has the focus, as a user would."""
    for _ in range(12):
        focused = app.focused
        if isinstance(focused, GpuPanel) and focused.index == index:
            return
        await pilot.press("tab")
    raise AssertionError(f"tab never reached GPU {index}")


async def test_c_compares_with_the_focused_gpu_and_g_steps_past_the_lost_one() -> None:
    app = _app()
    async with app.run_test(size=(160, 50)) as pilot:
        await wait_for(pilot, lambda: app.latest_snapshot is not None)
        await _focus_gpu(pilot, app, 2)
        await pilot.press("c")
        await wait_for(pilot, lambda: isinstance(app.screen, CatalogScreen))
        screen = app.screen
        assert isinstance(screen, CatalogScreen)
        installed = screen.query_one("#catalog-installed", Static)
        assert "compared with GPU 2: L4" in _text(installed)
        await pilot.press("slash", *"H100 SXM", "enter")
        await pilot.pause()
        await pilot.press("enter")
        await pilot.pause()
        detail = screen.query_one("#catalog-detail", Static)
        assert "(GPU 2)" in _text(detail)
        await pilot.press("g")  # wraps to GPU 0, the 1080 Ti
        await pilot.pause()
        assert "(GPU 0)" in _text(detail) and "GTX 1080 Ti" in _text(detail)
        await pilot.press("g")  # GPU 1 is lost: named, not compared
        await pilot.pause()
        assert "not compared: GPU 1 is unavailable (GPU is lost)" in _text(detail)
        assert "ratio" not in _text(detail)
        assert "unavailable: GPU is lost" in _text(installed)


async def test_c_without_a_focused_gpu_follows_the_selected_process() -> None:
    app = _app()
    async with app.run_test(size=(160, 50)) as pilot:
        await wait_for(pilot, lambda: app.latest_snapshot is not None)
        await pilot.pause()
        table = app.dashboard.query_one(ProcessTable)
        await wait_for(pilot, lambda: table.selected is not None)
        for _ in range(10):  # the L4's processes are listed below the others'
            if table.selected is not None and table.selected.gpu_index == 2:
                break
            await pilot.press("down")
        assert table.selected is not None and table.selected.gpu_index == 2
        await pilot.press("c")
        await wait_for(pilot, lambda: isinstance(app.screen, CatalogScreen))
        screen = app.screen
        assert isinstance(screen, CatalogScreen)
        assert screen.target_gpu is not None and screen.target_gpu.index == 2
