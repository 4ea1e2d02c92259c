"""fastpaint.table_cells: the process table's cell caches must follow the data (what is
drawn is what was set), and a cell drawn from the cache must be DataTable's own cell.

Expected strings come from the values the test hands in, never from earlier output.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from textual.geometry import Region

from gputui.tui.app import GpuTuiApp
from gputui.tui.widgets.process_table import ProcessTable
from tests.waiting import wait_for


def _drawn(table: ProcessTable) -> list[str]:
    return [s.text for s in table.render_lines(Region(0, 0, table.size.width, table.size.height))]


def _header(table: ProcessTable) -> str:
    return next(line for line in _drawn(table) if "Command" in line)


def _app(source: Any) -> GpuTuiApp:
    return GpuTuiApp(
        source, interval=0.05, clock=lambda: "01:02:03", hostname="t", card_lookup=None
    )


async def test_header_drawn_follows_the_sort_column(scripted_source: Any) -> None:
    app = _app(scripted_source)
    async with app.run_test(size=(120, 40)) as pilot:
        table = app.dashboard.query_one(ProcessTable)
        await wait_for(pilot, lambda: table.row_count == 3)
        table.set_sort("pid", reverse=False)
        await wait_for(pilot, lambda: "PID ▲" in _header(table))
        assert "GPU mem ▼" not in _header(table)
        table.set_sort("user", reverse=True)
        await wait_for(pilot, lambda: "User ▼" in _header(table))
        assert "PID ▲" not in _header(table)


async def test_every_cell_changed_in_one_poll_is_drawn(scripted_source: Any) -> None:
    app = _app(scripted_source)
    async with app.run_test(size=(120, 40)) as pilot:
        table = app.dashboard.query_one(ProcessTable)
        await wait_for(pilot, lambda: table.row_count == 3)
        snap = scripted_source.next_snapshot
        moved = tuple(
            replace(p, cpu_percent=150.0 + i, sm_util=70 + i, running_s=3600.0 + 61 * i)
            for i, p in enumerate(snap.processes)
        )
        scripted_source.next_snapshot = replace(snap, processes=moved)

        def rows_show_new_values() -> bool:
            lines = _drawn(table)
            for i, p in enumerate(moved):
                row = next((line for line in lines if f" {p.pid} " in line), "")
                # 3600 + 61 i seconds is 1:00:00, 1:01:01, 1:02:02 (h:mm:ss).
                expected = (f"{70 + i}", f"{150 + i}", f"1:{i:02d}:{i:02d}")
                if not all(f" {v} " in row for v in expected):
                    return False
            return True

        await wait_for(pilot, rows_show_new_values)


async def test_fast_cell_drawing_matches_datatables_own(scripted_source: Any) -> None:
    """Changed cells skip Rich's general renderer; what they draw must be segment-for-segment
    what DataTable itself draws for the same text, style and width."""
    import random

    from textual.widgets import DataTable

    from gputui.tui.views.process_columns import BY_KEY
    from gputui.tui.widgets.process_table import styled

    rnd = random.Random(7)
    printable = [chr(c) for c in range(32, 127)]
    values = ["", " ", "a", "abc  ", "  abc", "x" * 7, "x" * 8, "x" * 9, "[bold]x[/bold]"]
    values += ["ünïcode", "wide 漢字 chars", "tab\there", "line\nbreak", "ctrl\x1bcode"]
    values += [
        "".join(rnd.choice(printable) for _ in range(rnd.randint(0, 40))) for _ in range(150)
    ]
    app = _app(scripted_source)
    async with app.run_test(size=(120, 40)) as pilot:
        table = app.dashboard.query_one(ProcessTable)
        await wait_for(pilot, lambda: table.row_count == 3)
        row_key = table._row_locations.get_key(1)
        fast = 0
        for name in ("user", "cpu", "command", "time"):
            column_index = [c.key.value for c in table.ordered_columns].index(name)
            column_key = table._column_locations.get_key(column_index)
            width = table.ordered_columns[column_index].get_render_width(table)
            for cursor in (False, True):
                style = table._get_row_style(1, table.rich_style)
                for value in values:
                    table._data[row_key][column_key] = styled(BY_KEY[name], value)
                    table._update_count += 1
                    ours = table._render_cell(1, column_index, style, width, cursor=cursor)
                    table._update_count += 1
                    theirs = DataTable._render_cell(table, 1, column_index, style, width, cursor)
                    assert ours == theirs, (name, value)
                    fast += (
                        table._cell_styles.get(
                            (
                                1,
                                column_index,
                                column_key,
                                style,
                                width,
                                cursor,
                                False,
                                table._show_hover_cursor,
                                table.show_cursor,
                                table._pseudo_class_state,
                            )
                        )
                        is not None
                    )
        # The fast path was taken for most values, not skipped.
        assert fast > len(values) * 4


async def test_cells_follow_a_theme_change(scripted_source: Any) -> None:
    from textual.widgets import DataTable

    app = _app(scripted_source)
    async with app.run_test(size=(120, 40)) as pilot:
        table = app.dashboard.query_one(ProcessTable)
        await wait_for(pilot, lambda: table.row_count == 3)
        column_index = [c.key.value for c in table.ordered_columns].index("user")
        width = table.ordered_columns[column_index].get_render_width(table)

        def ours_and_theirs() -> tuple[Any, Any]:
            style = table._get_row_style(0, table.rich_style)
            ours = table._render_cell(0, column_index, style, width, cursor=True)
            table._update_count += 1
            return ours, DataTable._render_cell(table, 0, column_index, style, width, True)

        before, _ = ours_and_theirs()
        app.theme = "textual-light"
        await pilot.pause(0.1)
        after, theirs = ours_and_theirs()
        assert after == theirs
        assert after != before  # the light theme does draw the cursor row differently
