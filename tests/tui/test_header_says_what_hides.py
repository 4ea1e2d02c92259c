"""While a filter, "mine" or --readonly is in force the header says so: a filter saved in
settings.toml hides processes at the next start, and the header is where one looks."""

from __future__ import annotations

import os

from demo_driving import app_for, ready, screen_lines

from gputui.tui.settings import Settings
from gputui.tui.views.kill import user_name
from tests.waiting import wait_for


async def test_saved_filter_and_mine_show_in_the_header_and_the_box_is_labelled() -> None:
    me = user_name(os.getuid())
    app = app_for(None, settings=Settings(filter="vllm", mine=True))
    async with app.run_test(size=(120, 40)) as pilot:
        # Not ready(): whether any row is left depends on who runs the tests.
        await wait_for(pilot, lambda: "filter vllm" in screen_lines(app)[0])
        header = screen_lines(app)[0]
        assert f"only {me}" in header and "filter vllm" in header
        assert any(line.startswith(" Filter: vllm") for line in screen_lines(app))
        await pilot.press("m")  # everyone's again
        await wait_for(pilot, lambda: f"only {me}" not in screen_lines(app)[0])
        await pilot.press("slash", "escape")  # the filter cleared
        await wait_for(pilot, lambda: "filter" not in screen_lines(app)[0])
        assert not any("Filter:" in line for line in screen_lines(app))


async def test_typing_a_filter_shows_it_in_the_header() -> None:
    app = app_for(None)
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(pilot, fit=False)
        assert "filter" not in screen_lines(app)[0]
        await pilot.press("slash", *"vllm", "enter")
        await wait_for(pilot, lambda: "filter vllm" in screen_lines(app)[0])


async def test_readonly_is_in_the_header() -> None:
    app = app_for(None, readonly=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot, fit=False)
        await wait_for(pilot, lambda: "READ-ONLY" in screen_lines(app)[0])
    app = app_for(None)
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot, fit=False)
        assert "READ-ONLY" not in screen_lines(app)[0]
