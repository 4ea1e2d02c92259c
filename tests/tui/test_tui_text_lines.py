"""The cheap drawing paths must draw exactly what Textual's own paths draw.

GPU and host panels and the header/details fields turn their Rich Text into strips
themselves
(widgets/text_lines.py), and the process table reads its styles once per render
pass; both are compared segment for segment (text, style, offset meta) with
Textual's own rendering of the same widget in the same state.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from rich.console import Console
from rich.style import Style
from rich.text import Text
from textual.widget import Widget
from textual.widgets import DataTable

from gputui.model.snapshot import MigDevice
from gputui.tui.app import GpuTuiApp
from gputui.tui.widgets.gpu_panel import GpuPanel
from gputui.tui.widgets.host_panel import HostPanel
from gputui.tui.widgets.process_table import ProcessTable
from gputui.tui.widgets.text_lines import text_strips
from tests.waiting import wait_for

from .conftest import GIB, ScriptedSource, make_device, make_snapshot


def _app(source: ScriptedSource) -> GpuTuiApp:
    return GpuTuiApp(
        source, interval=0.05, clock=lambda: "01:02:03", hostname="t", card_lookup=None
    )


def _both(widget: Widget) -> tuple[list[list[Any]], list[list[Any]]]:
    """What the widget draws (its own path) and what Textual's path draws, per line."""
    widget._render_content()
    ours = [list(strip) for strip in widget._render_cache.lines]
    Widget._render_content(widget)
    theirs = [list(strip) for strip in widget._render_cache.lines]
    return ours, theirs


def _fast_taken(widget: Widget) -> bool:
    text = widget.render()
    assert isinstance(text, Text)
    width, height = widget.size
    base = widget.visual_style.rich_style
    return text_strips(text, width, height, base, widget.app.console) is not None


def _devices() -> tuple[Any, ...]:
    mig = MigDevice(
        index=0,
        gpu_instance_id=1,
        compute_instance_id=0,
        uuid="MIG-1",
        name="NVIDIA A100-SXM4-80GB MIG 1g.10gb",
        profile="1g.10gb",
        memory_total=10 * GIB,
        memory_used=2 * GIB,
    )
    return (
        make_device(0, util=95, throttle_reasons=("sw_power_cap",)),
        replace(make_device(1, util=None, used_gib=None), failed="GPU is lost"),
        make_device(2, util=0, ecc_volatile_uncorrected=3, temperature_c=None, power_w=None),
        replace(make_device(3, util=40), mig_devices=(mig,)),
    )


async def test_gpu_and_host_panels_draw_what_textual_draws() -> None:
    fast = compared = 0
    for n_gpus, size, theme in (
        (2, (120, 40), "textual-dark"),
        (4, (200, 50), "textual-dark"),
        (4, (120, 24), "textual-dark"),
        (4, (200, 50), "textual-light"),
        (2, (120, 40), "ansi-dark"),
    ):
        source = ScriptedSource(make_snapshot(devices=_devices()[:n_gpus]))
        app = _app(source)
        app.theme = theme
        async with app.run_test(size=size) as pilot:
            await wait_for(pilot, lambda a=app, n=n_gpus: len(a.query(GpuPanel)) == n)  # type: ignore[misc]
            await pilot.pause(0.2)  # a few polls: sparklines with history
            widgets: list[Widget] = [*app.query(GpuPanel), app.query_one(HostPanel)]
            for widget in widgets:
                ours, theirs = _both(widget)
                assert ours == theirs, (n_gpus, size, theme, widget)
                compared += 1
                fast += _fast_taken(widget)
    # Compared, not skipped: only the compact 120-column throttled GPU's line is too wide.
    assert fast >= compared - 2, (fast, compared)
    assert compared == 2 + 1 + 4 + 1 + 4 + 1 + 4 + 1 + 2 + 1


async def test_a_line_wider_than_the_panel_takes_textuals_path() -> None:
    """Narrow terminal: the stats line is cut with an ellipsis, which only Textual draws."""
    source = ScriptedSource(make_snapshot(n_gpus=1))
    app = _app(source)
    async with app.run_test(size=(50, 30)) as pilot:
        await wait_for(pilot, lambda: len(app.query(GpuPanel)) == 1)
        panel = app.query_one(GpuPanel)
        await wait_for(pilot, lambda: panel.device is not None)
        await pilot.pause(0.1)
        assert not _fast_taken(panel)
        ours, theirs = _both(panel)
        assert ours == theirs
        assert any(seg.text.endswith("…") for line in ours for seg in line)


def test_text_strips_declines_what_it_cannot_draw() -> None:
    from rich.console import Console

    console = Console()
    base = Style(color="white", bgcolor="black")
    assert text_strips(Text("ok"), 10, 5, base, console) is not None
    assert text_strips(Text("too long for it"), 10, 5, base, console) is None
    assert text_strips(Text("wide 漢字"), 40, 5, base, console) is None
    assert text_strips(Text("a\tb"), 40, 5, base, console) is None
    three = text_strips(Text("a\nb\nc"), 10, 2, base, console)
    assert three is not None and [s.text for s in three] == ["a", "b"]  # cut at the height


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


def test_assembled_text_is_the_appended_text() -> None:
    """The panels build their lines in one go (gpu_panel.assemble); the Text must be the one
    that appending part by part builds: same plain text, same spans, so the same drawing."""
    from gputui.tui.widgets.gpu_panel import assemble, bar, bar_parts

    red, dim = Style(color="red"), Style(dim=True)
    parts: list[tuple[str, Style | None]] = [
        ("UTIL ", red),
        ("", red),
        ("  42 % ", None),
        *bar_parts(57.0, 24, red, dim),
        ("▁▂▃", dim),
    ]
    appended = Text(no_wrap=True, end="")
    for piece, style in parts:
        appended.append(piece, style)
    assembled = assemble(parts)
    assert assembled.plain == appended.plain
    assert assembled.spans == appended.spans
    assert (assembled.no_wrap, assembled.end) == (appended.no_wrap, appended.end)
    # The half cell keeps its own span, as the appended bar had.
    half = Text(no_wrap=True, end="")
    half.append("━" * 2, red)
    half.append("╸", red)
    half.append("─" * 7, dim)
    assert bar(25.0, 10, red, dim).spans == half.spans


async def test_header_and_details_fields_draw_what_static_draws() -> None:
    """The header and the process details (Field, drawn by text_lines.draw_text where their
    lines fit) against Static's own drawing of the same text, in both themes."""
    from textual.widgets import Static

    from gputui.tui.widgets.field import Field

    for size, theme in (((200, 50), "textual-dark"), ((120, 40), "textual-light")):
        source = ScriptedSource(make_snapshot())
        app = _app(source)
        app.theme = theme
        async with app.run_test(size=size) as pilot:
            table = app.dashboard.query_one(ProcessTable)
            await wait_for(pilot, lambda t=table: t.row_count == 3)  # type: ignore[misc]
            await pilot.pause(0.1)
            for selector in ("#info", "#details"):
                field = app.dashboard.query_one(selector, Field)
                assert isinstance(field.content, Text)
                assert draw_text_taken(field)
                field._render_content()
                ours = [list(strip) for strip in field._render_cache.lines]
                Static._render_content(field)
                theirs = [list(strip) for strip in field._render_cache.lines]
                assert ours == theirs, (size, theme, selector)


def draw_text_taken(widget: Widget) -> bool:
    content = getattr(widget, "content", None)
    width, height = widget.size
    if not isinstance(content, Text):
        return False
    base = widget.visual_style.rich_style
    return text_strips(content, width, height, base, widget.app.console) is not None


def test_text_strips_leaves_named_colours_to_textual() -> None:
    """A span styled "bold red" is mapped to the palette by Textual's path (color(1)), not
    Rich's: such a text takes Textual's path; "bold" alone does not need it."""
    console = Console()
    red = Text("x")
    red.append("lost", style="bold red")
    bold = Text("x")
    bold.append("PID 1", style="bold")
    assert text_strips(red, 40, 2, Style(), console) is None
    assert text_strips(bold, 40, 2, Style(), console) is not None


def test_segments_of_ordered_spans_are_richs() -> None:
    """text_lines._segments skips Rich's style stack for spans in order: its segments must
    be Rich's (text and style) for those, and Rich's own for anything else."""
    from rich.text import Span

    from gputui.tui.widgets.text_lines import _segments

    console = Console()
    red, dim = Style(color="red"), Style(dim=True)
    texts = [
        Text("UTIL ━━━╸── 42 %", spans=[Span(0, 5, red), Span(5, 9, red), Span(9, 11, dim)]),
        Text("gap then style", spans=[Span(4, 8, dim)]),
        Text("touching", spans=[Span(0, 3, red), Span(3, 3, dim), Span(3, 8, dim)]),
        Text("overlap here", spans=[Span(0, 12, dim), Span(3, 6, red)]),  # Rich's path
        Text("by name", spans=[Span(0, 2, "bold")]),  # Rich's path
        Text("two\nlines", spans=[Span(0, 3, red), Span(4, 9, dim)]),
    ]
    for text in texts:
        assert list(_segments(text, console)) == list(text.render(console)), text.plain


async def test_box_lines_draw_what_styles_cache_draws() -> None:
    """Widgets whose lines need no box work (compact GPU panels, the process table under
    its top border) are drawn by box_lines; every line, border and blanks included, must
    be StylesCache's, in both themes, wide and short terminals, and cropped."""
    from textual.geometry import Region

    from gputui.tui.widgets.box_lines import box_lines

    taken = 0
    for n_gpus, size, theme in (
        (4, (200, 50), "textual-dark"),
        (4, (120, 24), "textual-light"),
        (2, (120, 40), "textual-dark"),  # full panels: bordered, StylesCache's path
    ):
        source = ScriptedSource(make_snapshot(devices=_devices()[:n_gpus]))
        app = _app(source)
        app.theme = theme
        async with app.run_test(size=size) as pilot:
            table = app.dashboard.query_one(ProcessTable)
            await wait_for(pilot, lambda t=table: t.row_count == 3)  # type: ignore[misc]
            await pilot.pause(0.2)
            widgets: list[Widget] = [*app.query(GpuPanel), app.query_one(HostPanel), table]
            for widget in widgets:
                w, h = widget.region.size
                for crop in (Region(0, 0, w, h), Region(2, 1, max(1, w - 5), max(1, h - 1))):
                    widget.refresh()
                    if isinstance(widget, ProcessTable):
                        widget._render_pass = {}
                    try:
                        ours = box_lines(widget, crop)
                        widget.refresh()
                        theirs = Widget.render_lines(widget, crop)
                    finally:
                        if isinstance(widget, ProcessTable):
                            widget._render_pass = None
                    if ours is not None:
                        taken += 1
                        assert [list(s) for s in ours] == [list(s) for s in theirs], (
                            size,
                            theme,
                            widget,
                            crop,
                        )
                        assert [s.cell_length for s in ours] == [s.cell_length for s in theirs]
    assert taken >= 2 * (4 + 1 + 4 + 1 + 1)  # compact panels and tables, both crops


async def test_a_justified_field_is_left_to_static() -> None:
    """draw_text draws left-aligned lines only: a centred or right-justified Text in a Field
    is laid out by Static's own path."""
    from gputui.tui.widgets.field import Field
    from gputui.tui.widgets.text_lines import draw_text

    source = ScriptedSource(make_snapshot())
    app = _app(source)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause(0.1)
        field = app.dashboard.query_one("#details", Field)
        assert not draw_text(field, Text("centred", justify="center"))
        assert not draw_text(field, Text("right", justify="right"))
        assert draw_text(field, Text("left as usual"))
