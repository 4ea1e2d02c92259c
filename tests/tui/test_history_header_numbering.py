"""The history screen's header numbers GPUs by their index (`GPUs [0] 1`), not `n of 2`."""

from __future__ import annotations

from demo_driving import app_for, ready

from gputui.tui.screens.history import HistoryScreen
from tests.waiting import wait_for


async def test_history_header_numbers_gpus_by_their_index() -> None:
    app = app_for(None)
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(pilot, fit=False)
        await pilot.press("h")
        await wait_for(pilot, lambda: isinstance(app.screen, HistoryScreen))
        screen = app.screen
        assert isinstance(screen, HistoryScreen)
        for _ in range(2):  # this GPU, then the other one
            title = screen.title_text().plain
            index = int(title.split(":")[0].split()[-1])
            assert " of 2" not in title
            assert ("GPUs [0] 1" if index == 0 else "GPUs 0 [1]") in title
            await pilot.press("right")
            await pilot.pause(0.1)
            assert int(screen.title_text().plain.split(":")[0].split()[-1]) != index
