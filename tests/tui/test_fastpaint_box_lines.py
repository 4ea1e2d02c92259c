"""fastpaint.box_lines must draw every line StylesCache draws: the same segments, the
same lengths, borders and blank lines included."""

from __future__ import annotations

from textual.widget import Widget

from gputui.tui.widgets.gpu_panel import GpuPanel
from gputui.tui.widgets.host_panel import HostPanel
from gputui.tui.widgets.process_table import ProcessTable
from tests.waiting import wait_for

from .conftest import ScriptedSource, make_snapshot
from .fastpaint_cases import paint_app as _app
from .fastpaint_cases import paint_devices as _devices


async def test_box_lines_draw_what_styles_cache_draws() -> None:
    """Widgets whose lines need no box work (compact GPU panels, the process table under
    its top border) are drawn by box_lines; every line, border and blanks included, must
    be StylesCache's, in both themes, wide and short terminals, and cropped."""
    from textual.geometry import Region

    from gputui.tui.fastpaint.box_lines import box_lines

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
