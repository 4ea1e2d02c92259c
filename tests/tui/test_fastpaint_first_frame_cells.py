"""The process table's first frame: every row is new, yet Rich's cell path runs for few rows.

A cell style learnt in one row is reused, with the row's own meta, for the other rows of
the same parity (fastpaint/table_cells.py `_sibling_style`); what is drawn must still be
DataTable's own cell, segment for segment.
"""

from __future__ import annotations

from typing import Any

from textual.widgets import DataTable

from gputui.tui.app import GpuTuiApp
from gputui.tui.widgets.process_table import ProcessTable
from tests.waiting import wait_for

from .conftest import ScriptedSource, make_process, make_snapshot

ROWS = 30


def _source() -> ScriptedSource:
    procs = tuple(
        make_process(i % 2, 2000 + i, user=f"user{i % 5}", sm_util=i, running_s=60.0 * i)
        for i in range(ROWS)
    )
    return ScriptedSource(make_snapshot(processes=procs))


async def test_first_frame_draws_few_rows_through_rich_and_every_cell_as_datatable_does(
    monkeypatch: Any,
) -> None:
    textual_rows: list[int] = []
    original = DataTable._render_cell

    def counting(self: DataTable[Any], row_index: int, *args: Any, **kw: Any) -> Any:
        textual_rows.append(row_index)
        return original(self, row_index, *args, **kw)

    monkeypatch.setattr(DataTable, "_render_cell", counting)
    app = GpuTuiApp(
        _source(), interval=3600.0, clock=lambda: "01:02:03", hostname="t", card_lookup=None
    )
    async with app.run_test(size=(160, 50)) as pilot:
        table = app.dashboard.query_one(ProcessTable)
        await wait_for(pilot, lambda: table.row_count == ROWS and table.settled)
        await pilot.pause(0.1)
        data_rows = {r for r in textual_rows if r >= 0}
        # one row of each parity (and the cursor's row) through Rich; the rest derived
        assert len(data_rows) <= 4, sorted(data_rows)
        monkeypatch.setattr(DataTable, "_render_cell", original)
        widths = [c.get_render_width(table) for c in table.ordered_columns]
        compared = 0
        for row in range(ROWS):
            style = table._get_row_style(row, table.rich_style)
            for column, width in enumerate(widths):
                cursor = table.cursor_coordinate.row == row
                ours = table._render_cell(row, column, style, width, cursor=cursor)
                table._update_count += 1  # DataTable's own cache: drawn anew
                theirs = DataTable._render_cell(table, row, column, style, width, cursor)
                assert ours == theirs, (row, column)
                compared += 1
        assert compared == ROWS * len(widths)
