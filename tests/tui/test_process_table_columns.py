"""The process table's columns as drawn: the sort arrow on every column, the columns giving way
by priority at narrow widths while the command stays, and Home/End moving the selection."""

from __future__ import annotations

from typing import Any

import pytest

from gputui.tui.widgets.process_table import COLUMNS

from .scripted_app import header_line, make_app, ready_table, screen_lines

# -- every column shows the sort arrow ------------------------------------------------


@pytest.mark.parametrize("width", [120, 200])
async def test_sort_indicator_on_every_column(scripted_source: Any, width: int) -> None:
    app = make_app(scripted_source, interval=30.0)
    async with app.run_test(size=(width, 40)) as pilot:
        table = await ready_table(pilot, app)
        seen = []
        for _ in range(len(table.shown)):
            await pilot.press("s")
            await pilot.pause()
            column = next(c for c in COLUMNS if c.key == table.sort_column)
            arrow = "▼" if table.sort_reverse else "▲"
            assert f"{column.label} {arrow}" in header_line(app), (column.key, header_line(app))
            seen.append(column.key)
        assert {c.key for c in table.shown} == set(seen)


# -- columns give way by priority; the command stays -----------------------------------


@pytest.mark.parametrize(
    ("width", "hidden"),
    [
        (80, {"Container", "Host mem", "Time"}),
        (100, {"Container", "Host mem"}),
        # the command takes its share (COMMAND_SHARE) before Container and Host mem.
        (120, {"Container", "Host mem"}),
        (200, set()),
    ],
)
async def test_narrow_terminals_keep_the_command(
    scripted_source: Any, width: int, hidden: set[str]
) -> None:
    app = make_app(scripted_source, interval=30.0)
    async with app.run_test(size=(width, 24)) as pilot:
        await ready_table(pilot, app)
        header = header_line(app)
        assert "Command" in header and "PID" in header and "GPU mem" in header
        for label in hidden:
            assert label not in header, header
        if width >= 200:
            assert all(c.label in header for c in COLUMNS), header
        text = "\n".join(screen_lines(app))
        assert "python train.py" in text  # the command itself, abbreviated if need be
        assert len(header.rstrip()) <= width


async def test_home_and_end_move_the_selection(scripted_source: Any) -> None:
    app = make_app(scripted_source, interval=30.0)
    async with app.run_test(size=(120, 40)) as pilot:
        table = await ready_table(pilot, app)
        await pilot.press("end")
        assert table.cursor_row == table.row_count - 1
        await pilot.press("home")
        assert table.cursor_row == 0
