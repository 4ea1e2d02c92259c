"""SVG snapshot tests of the dashboard, from the frozen simulated scenario.

Baselines live in tests/tui/__snapshots__/; regenerate with
`pytest tests/tui/test_tui_snapshots.py --snapshot-update` and look at them.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from textual.pilot import Pilot

from gputui.core.resources import scenarios_dir
from gputui.model.snapshot import DeviceInfo
from gputui.tui.app import GpuTuiApp
from gputui.tui.demo import demo_app
from gputui.tui.screens.kill import KillScreen
from gputui.tui.views.kill import KillPolicy
from gputui.tui.widgets.fit_line import FitLine
from gputui.tui.widgets.process_table import ProcessTable


def fixed_cards(devices: Sequence[DeviceInfo]) -> dict[int, str]:
    """A stand-in for the catalog so catalog data edits do not churn these pictures."""
    return {
        d.index: f"{(d.architecture or 'unknown').capitalize()} · catalog: {d.name.split()[-1]}"
        for d in devices
    }


def app_for(scenario: str | None = None, **kw: Any) -> GpuTuiApp:
    path = scenarios_dir() / scenario if scenario else None
    # the shipped examples, not whatever models file this machine's user has
    kw.setdefault("models_path", Path(__file__).resolve().parents[2] / "examples" / "models.toml")
    return demo_app(
        path,
        card_lookup=fixed_cards,
        kill_policy=KillPolicy(
            is_root=lambda: True, allow_simulated=True, send_signal=lambda pid, sig: None
        ),
        **kw,
    )


async def ready(pilot: Pilot[Any]) -> None:
    app = pilot.app
    assert isinstance(app, GpuTuiApp)
    for _ in range(250):
        if app.latest_snapshot is not None and app.cards_matched:
            break
        await pilot.pause(0.02)
    assert app.latest_snapshot is not None
    fit = app.dashboard.query_one(FitLine)
    for _ in range(1500):  # the fit line's first estimate pass (a thread; the box is slow)
        if fit.passes:
            break
        await pilot.pause(0.02)
    table = app.dashboard.query_one(ProcessTable)
    for _ in range(250):
        await pilot.pause(0.02)
        if table.settled:
            break
    await pilot.pause(0.1)


def test_dashboard_120x40(snap_compare: Any) -> None:
    assert snap_compare(app_for(), terminal_size=(120, 40), run_before=ready)


def test_dashboard_80x24(snap_compare: Any) -> None:
    assert snap_compare(app_for(), terminal_size=(80, 24), run_before=ready)


def test_dashboard_fallback_banner_60x20(snap_compare: Any) -> None:
    app = app_for(fallback_reason="NVML Shared Library Not Found")
    assert snap_compare(app, terminal_size=(60, 20), run_before=ready)


def test_compact_8gpu_120x40(snap_compare: Any) -> None:
    assert snap_compare(app_for("demo-8gpu.toml"), terminal_size=(120, 40), run_before=ready)


def test_kill_dialog(snap_compare: Any) -> None:
    async def open_dialog(pilot: Pilot[Any]) -> None:
        await ready(pilot)
        await pilot.press("k")
        app = pilot.app
        for _ in range(250):  # a busy machine may take a while to mount and focus the dialog
            focused = app.screen.focused
            if isinstance(app.screen, KillScreen) and focused is not None and focused.id == "term":
                break
            await pilot.pause(0.02)
        assert isinstance(app.screen, KillScreen)
        await pilot.pause(0.1)

    assert snap_compare(app_for(), terminal_size=(120, 40), run_before=open_dialog)
