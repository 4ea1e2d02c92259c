"""fastpaint.text_paint must draw exactly what Textual's own path draws.

GPU and host panels and the header/details fields turn their Rich Text into strips
themselves (fastpaint/text_paint.py); what they draw is compared segment for segment
(text, style, offset meta) with Textual's own rendering of the same widget in the same
state (`Widget._render_content`, the public path's drawing).
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.style import Style
from rich.text import Text
from textual.widget import Widget

from gputui.tui.fastpaint.text_paint import text_strips
from gputui.tui.widgets.gpu_panel import GpuPanel
from gputui.tui.widgets.host_panel import HostPanel
from gputui.tui.widgets.process_table import ProcessTable
from tests.waiting import wait_for

from .conftest import ScriptedSource, make_snapshot
from .fastpaint_cases import paint_app as _app
from .fastpaint_cases import paint_devices as _devices


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
    """text_paint._segments skips Rich's style stack for spans in order: its segments must
    be Rich's (text and style) for those, and Rich's own for anything else."""
    from rich.text import Span

    from gputui.tui.fastpaint.text_paint import _segments

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


async def test_a_justified_field_is_left_to_static() -> None:
    """draw_text draws left-aligned lines only: a centred or right-justified Text in a Field
    is laid out by Static's own path."""
    from gputui.tui.fastpaint.text_paint import draw_text
    from gputui.tui.widgets.field import Field

    source = ScriptedSource(make_snapshot())
    app = _app(source)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause(0.1)
        field = app.dashboard.query_one("#details", Field)
        assert not draw_text(field, Text("centred", justify="center"))
        assert not draw_text(field, Text("right", justify="right"))
        assert draw_text(field, Text("left as usual"))
