"""q quits from the help screen too, and the header clock ticks between slow polls."""

from __future__ import annotations

from typing import Any

from gputui.tui.screens.help import HelpScreen
from tests.waiting import wait_for

from .scripted_app import make_app


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
