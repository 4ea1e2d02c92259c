"""What one poll repaints: only what changed, without a layout pass, in one frame.

Counted, not timed: Widget.refresh calls per widget, those asking for a layout
pass, and compositor frames, around one poll (the cost work; the
timings are in benchmarks/tui.py).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.screen import Screen
from textual.widget import Widget

from gputui.tui.app import GpuTuiApp
from gputui.tui.widgets.fit_line import FitLine
from gputui.tui.widgets.gpu_panel import GpuPanel
from gputui.tui.widgets.process_table import ProcessTable
from tests.waiting import wait_for

from .conftest import ScriptedSource, make_device, make_snapshot


class Counts:
    def __init__(self) -> None:
        self.refreshes: Counter[str] = Counter()
        self.layouts: Counter[str] = Counter()
        self.frames = 0


@contextmanager
def counting(monkeypatch: pytest.MonkeyPatch) -> Iterator[Counts]:
    counts = Counts()
    refresh, frame = Widget.refresh, Screen._compositor_refresh

    def counted_refresh(widget: Widget, *args: Any, **kw: Any) -> Any:
        counts.refreshes[type(widget).__name__] += 1
        if kw.get("layout"):
            counts.layouts[type(widget).__name__] += 1
        return refresh(widget, *args, **kw)

    def counted_frame(screen: Screen[Any]) -> None:
        counts.frames += 1
        frame(screen)

    with monkeypatch.context() as m:
        m.setattr(Widget, "refresh", counted_refresh)
        m.setattr(Screen, "_compositor_refresh", counted_frame)
        yield counts


def _devices(util0: int) -> tuple[Any, ...]:
    return tuple(make_device(i, util=util0 if i == 0 else 30) for i in range(4))


async def _poll(pilot: Pilot[Any], app: GpuTuiApp, source: ScriptedSource, snap: Any) -> None:
    source.next_snapshot = snap
    done = app.poll_count + 1
    app.poller.poll_now()
    await wait_for(pilot, lambda: app.poll_count >= done)
    await pilot.pause(0.2)  # the frame (Textual's update timer) and anything it queues


async def test_one_poll_repaints_what_changed_in_one_frame_without_layout(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    base = make_snapshot(devices=_devices(10))
    source = ScriptedSource(base)
    app = GpuTuiApp(
        source, interval=3600.0, clock=lambda: "01:02:03", hostname="t", card_lookup=None
    )
    async with app.run_test(size=(200, 50)) as pilot:
        await wait_for(pilot, lambda: len(app.query(GpuPanel)) == 4 and app.poll_count >= 1)
        line = app.dashboard.query_one(FitLine)
        await wait_for(pilot, lambda: line.passes >= 1 and not line.busy, timeout=60)
        await pilot.pause(0.3)  # its lines drawn
        # Same timestamp: no new history point, so only GPU 0's value moves.
        moved = replace(base, devices=_devices(90))
        with counting(monkeypatch) as counts:
            await _poll(pilot, app, source, moved)
        assert counts.refreshes["GpuPanel"] == 1, counts.refreshes
        assert "ProcessTable" not in counts.refreshes  # no process changed
        assert not counts.layouts, counts.layouts
        assert counts.frames == 1

        # The same snapshot again: nothing to draw at all.
        with counting(monkeypatch) as counts:
            await _poll(pilot, app, source, moved)
        assert "GpuPanel" not in counts.refreshes, counts.refreshes
        assert not counts.layouts
        assert counts.frames == 0

        # One process's CPU% moves: one table refresh, still no layout.
        procs = list(moved.processes)
        procs[0] = replace(procs[0], cpu_percent=77.0)
        with counting(monkeypatch) as counts:
            await _poll(pilot, app, source, replace(moved, processes=tuple(procs)))
        assert counts.refreshes["ProcessTable"] == 1, counts.refreshes
        assert "GpuPanel" not in counts.refreshes
        assert not counts.layouts
        assert counts.frames == 1
        table = app.dashboard.query_one(ProcessTable)
        assert "77" in table.row_text(f"{procs[0].gpu_index}:{procs[0].pid}")
