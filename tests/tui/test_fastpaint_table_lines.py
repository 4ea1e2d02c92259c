"""fastpaint.table_lines (the process table drawn a render pass at a time, rows straight
from their texts) must draw DataTable's own lines: compared segment for segment (text,
style, meta) with DataTable's path in the same state."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import DataTable

from gputui.tui.widgets.process_table import ProcessTable
from tests.waiting import wait_for

from .conftest import ScriptedSource, make_snapshot
from .fastpaint_cases import paint_app as _app


async def test_process_rows_drawn_in_one_pass_match_datatables_own() -> None:
    source = ScriptedSource(make_snapshot())
    app = _app(source)
    async with app.run_test(size=(160, 40)) as pilot:
        table = app.dashboard.query_one(ProcessTable)
        await wait_for(pilot, lambda: table.row_count == 3)
        for theme in ("textual-dark", "textual-light"):
            app.theme = theme
            await pilot.pause(0.1)
            base = table.rich_style
            for row_index in (-1, 0, 1, 2):
                key = (
                    table._header_row_key
                    if row_index == -1
                    else table._row_locations.get_key(row_index)
                )
                for hover_row in (-1, 1):
                    table._render_pass = {}  # as in render_lines
                    try:
                        ours = table._render_line_in_row(
                            key,
                            0,
                            base,
                            table.cursor_coordinate,
                            table.hover_coordinate._replace(row=hover_row),
                        )
                    finally:
                        table._render_pass = None
                    table._update_count += 1  # no cached rows: DataTable draws anew
                    theirs = DataTable._render_line_in_row(
                        table,
                        key,
                        0,
                        base,
                        table.cursor_coordinate,
                        table.hover_coordinate._replace(row=hover_row),
                    )
                    assert ours == theirs, (theme, row_index, hover_row)


async def test_process_table_lines_match_datatables_own() -> None:
    """Whole lines (header, rows, cursor row, the blank below), wide and narrow terminals."""
    from textual.widgets import DataTable

    for size in ((160, 40), (80, 24), (40, 20)):
        source = ScriptedSource(make_snapshot())
        app = _app(source)
        async with app.run_test(size=size) as pilot:
            table = app.dashboard.query_one(ProcessTable)
            await wait_for(pilot, lambda t=table: t.row_count == 3)  # type: ignore[misc]
            await pilot.pause(0.1)
            base = table.rich_style
            for y in range(table.size.height):
                table._render_pass = {}
                try:
                    ours = table._render_line(y, 0, table.size.width, base)
                finally:
                    table._render_pass = None
                table._update_count += 1
                theirs = DataTable._render_line(table, y, 0, table.size.width, base)
                assert list(ours) == list(theirs), (size, y)
                assert ours.cell_length == theirs.cell_length == table.size.width


async def test_process_rows_drawn_from_their_texts_match_datatables_own() -> None:
    """Once a row's place has been drawn, the next polls draw it straight from the cells'
    texts (`_data_line`); that line must be DataTable's, cursor row and zebra rows alike."""
    from textual.widgets import DataTable

    source = ScriptedSource(make_snapshot())
    app = _app(source)
    async with app.run_test(size=(160, 40)) as pilot:
        table = app.dashboard.query_one(ProcessTable)
        await wait_for(pilot, lambda: table.row_count == 3)
        await pilot.pause(0.1)
        # New values in every row (as a poll brings): the texts change, the places do not.
        for key in list(table.processes):
            row = table._data[table._row_locations.get_key(table.get_row_index(key))]  # type: ignore[index]
            for column_key in list(row):
                if column_key.value == "time":
                    row[column_key] = Text("9:59:59", justify="right", overflow="ellipsis")
        table._update_count += 1
        base = table.rich_style
        drawn = 0
        for y in range(1, 1 + table.row_count):
            table._render_pass = {}
            try:
                row_key, offset = table._get_offsets(y)
                fast = table._data_line(row_key, offset, base, table.size.width)
                ours = table._render_line(y, 0, table.size.width, base)
            finally:
                table._render_pass = None
            table._update_count += 1
            theirs = DataTable._render_line(table, y, 0, table.size.width, base)
            assert list(ours) == list(theirs), y
            if fast is not None:
                drawn += 1
                assert list(fast) == list(theirs), y
        assert drawn == table.row_count  # every row took the direct path
        for y in range(table.size.height):  # render_line's per-pass reads, header included
            table._render_pass = {}
            try:
                ours = table.render_line(y)
            finally:
                table._render_pass = None
            table._update_count += 1
            assert list(ours) == list(DataTable.render_line(table, y)), y
