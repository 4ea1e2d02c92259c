"""The dashboard's first frame: drawn from the poll begun before Textual (tui/first_poll.py).

With the first poll ended by compose time, the GPU panels are composed with the
screen, their layout classes set, and filled before the first paint; a first poll
that fails or is slow goes through the same paths as any poll's outcome.
"""

from __future__ import annotations

from typing import Any

import pytest

from gputui.core.resources import scenarios_dir
from gputui.sources.simulated.source import SimulatedSource
from gputui.tui import first_poll as first_poll_module
from gputui.tui.app import GpuTuiApp
from gputui.tui.first_poll import FirstPoll
from gputui.tui.screens.dashboard import DashboardScreen
from gputui.tui.widgets.fit_line import FitLine
from gputui.tui.widgets.gpu_panel import GpuPanel
from tests.waiting import wait_for

from .conftest import make_app


async def test_panels_composed_with_the_screen_and_filled_before_polling_again() -> None:
    source = SimulatedSource.from_scenario(scenarios_dir() / "demo-8gpu.toml", clock=lambda: 600.0)
    first = FirstPoll(source)
    assert first.wait(30)
    assert first.result is not None
    app = make_app(source, interval=30.0, first_poll=first)
    mounted_later: list[int] = []
    original = DashboardScreen.ensure_panels

    async def counting(self: DashboardScreen, snap: Any) -> None:
        before = len(self.query(GpuPanel))
        await original(self, snap)
        if len(self.query(GpuPanel)) != before:
            mounted_later.append(len(self.query(GpuPanel)))

    DashboardScreen.ensure_panels = counting  # type: ignore[method-assign]
    try:
        async with app.run_test(size=(200, 50)) as pilot:
            await wait_for(pilot, lambda: app.latest_snapshot is not None)
            assert app.latest_snapshot is first.result  # the first poll's own snapshot
            assert app.poll_count == 1
            panels = list(app.dashboard.query(GpuPanel))
            assert [p.index for p in panels] == [d.index for d in first.result.devices]
            # 8 GPUs: compact, set before mounting (no restyle of the mounted tree after)
            assert all(p.has_class("compact") for p in panels)
            assert app.dashboard.query_one("#gpus").has_class("compact")
            assert mounted_later == []  # none mounted after compose
            # each panel shows its device's values from that snapshot
            for panel, dev in zip(panels, first.result.devices, strict=True):
                assert panel.device is dev
    finally:
        DashboardScreen.ensure_panels = original  # type: ignore[method-assign]


async def test_failed_first_poll_is_shown_and_the_next_poll_recovers(
    scripted_source: Any,
) -> None:
    scripted_source.error = RuntimeError("driver said no")
    first = FirstPoll(scripted_source)
    assert first.wait(30)
    app = make_app(scripted_source, first_poll=first, interval=0.1)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.last_error is not None)
        assert app.last_error == "RuntimeError: driver said no"
        assert app.latest_snapshot is None
        scripted_source.error = None
        await wait_for(pilot, lambda: app.latest_snapshot is not None)
        assert app.last_error is None
        assert len(app.dashboard.query(GpuPanel)) == len(scripted_source.next_snapshot.devices)


async def test_slow_first_poll_is_drawn_when_it_ends_and_never_doubled(
    scripted_source: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading

    monkeypatch.setattr(first_poll_module, "COMPOSE_WAIT_S", 0.01)
    import gputui.tui.screens.dashboard as dashboard_module

    monkeypatch.setattr(dashboard_module, "COMPOSE_WAIT_S", 0.01)
    scripted_source.gate = threading.Event()
    first = FirstPoll(scripted_source)
    app = make_app(scripted_source, interval=30.0, first_poll=first)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause(0.2)
        assert len(app.dashboard.query(GpuPanel)) == 0  # composed without it
        assert app.poll_in_flight  # the first poll counts as the one in flight
        assert scripted_source.polls == 1  # no second poll started meanwhile
        scripted_source.gate.set()
        await wait_for(pilot, lambda: app.latest_snapshot is not None)
        assert scripted_source.polls == 1
        assert len(app.dashboard.query(GpuPanel)) == len(scripted_source.next_snapshot.devices)


async def test_card_labels_and_fit_line_start_after_the_first_frame(
    scripted_source: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    events: list[str] = []
    first = FirstPoll(scripted_source)
    assert first.wait(30)
    app = make_app(scripted_source, interval=30.0, first_poll=first, card_lookup=lambda devices: {})
    original_apply = GpuTuiApp.apply_snapshot
    original_after = GpuTuiApp._after_first_frame
    original_release = FitLine.release
    original_pass = FitLine._run_pass

    async def apply(self: GpuTuiApp, snap: Any) -> None:
        events.append("apply")
        await original_apply(self, snap)

    def after(self: GpuTuiApp) -> None:
        events.append("after first frame")
        original_after(self)

    def release(self: FitLine) -> None:
        events.append("fit line released")
        original_release(self)

    def run_pass(self: FitLine, *args: Any, **kw: Any) -> Any:
        events.append("fit pass")
        return original_pass(self, *args, **kw)

    monkeypatch.setattr(GpuTuiApp, "apply_snapshot", apply)
    monkeypatch.setattr(GpuTuiApp, "_after_first_frame", after)
    monkeypatch.setattr(FitLine, "release", release)
    monkeypatch.setattr(FitLine, "_run_pass", run_pass)
    async with app.run_test(size=(120, 40)) as pilot:
        line = app.dashboard.query_one(FitLine)
        await wait_for(pilot, lambda: app.cards_matched and line.passes > 0, timeout=120)
    assert events[:4] == ["apply", "after first frame", "fit line released", "fit pass"]


def test_held_fit_line_starts_no_pass(scripted_source: Any) -> None:
    line = FitLine(held=True)
    started: list[object] = []
    line._run_pass = lambda *a, **kw: started.append(a)  # type: ignore[method-assign]
    line.update_snapshot(scripted_source.next_snapshot)
    line.update_snapshot(scripted_source.next_snapshot)
    assert started == []
    assert line.held


async def test_process_table_is_focused_from_the_start_never_a_panel_first(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The panels are composed with the screen: the first GPU panel must not take the
    focus first (a focus change and a restyle more before the first frame)."""
    from textual.screen import Screen

    from gputui.tui.widgets.process_table import ProcessTable

    focused: list[str] = []
    original = Screen.set_focus

    def set_focus(self: Screen[Any], widget: Any, *args: Any, **kw: Any) -> Any:
        if widget is not None:
            focused.append(type(widget).__name__)
        return original(self, widget, *args, **kw)

    monkeypatch.setattr(Screen, "set_focus", set_focus)
    source = SimulatedSource.from_scenario(scenarios_dir() / "demo-8gpu.toml", clock=lambda: 600.0)
    first = FirstPoll(source)
    assert first.wait(30)
    app = make_app(source, interval=30.0, first_poll=first)
    async with app.run_test(size=(200, 50)) as pilot:
        await wait_for(pilot, lambda: app.latest_snapshot is not None)
        await pilot.pause(0.1)
        assert isinstance(app.focused, ProcessTable)
    assert focused and set(focused) == {"ProcessTable"}, focused
