"""A widget's lines as Textual's StylesCache draws them, without its per-line box work
where a line has no box around it.

Textual draws each line of a widget through `StylesCache.render_line`: it reads the
border, outline, padding, tint, opacity and hatch rules, builds closures, and wraps
the content line in a new Strip, whether or not there is anything to draw around it.
With ~40 lines changing every poll (sparklines shift, every process row's Time
ticks) that was ~100 us a line, more than drawing the line's content. For a line
with no left or right border, no padding, no outline, tint, opacity, text opacity or
hatch, what StylesCache draws is the content line made the content width in the
widget's inner background style, then the app's line filters: that is what
`box_lines` draws, with StylesCache's own cache of clean lines. Lines it cannot vouch
for (a top or bottom border, here the process table's) are drawn by StylesCache
itself, with the arguments `StylesCache.render_widget` would pass.
tests/tui/test_fastpaint_box_lines.py compares both line for line.

Reads StylesCache's private cache (hence fastpaint/); Textual is pinned to an exact version for this.
"""

from __future__ import annotations

from textual.geometry import NULL_SPACING, Region
from textual.strip import Strip
from textual.style import Style
from textual.widget import Widget


def box_lines(widget: Widget, crop: Region) -> list[Strip] | None:
    """`widget.render_lines(crop)` where no content line has a box around it; None when
    some may (the caller then takes Textual's own path)."""
    styles = widget.styles
    (top, _), (right, _), (bottom, _), (left, _) = styles.border
    if (
        left
        or right
        or styles.padding != NULL_SPACING
        or any(edge for edge, _ in styles.outline)
        or styles.tint.a
        or widget.opacity != 1.0
        or styles.text_opacity != 1.0
        or (styles.has_rule("hatch") and styles.hatch != "none")
        or (widget.auto_links and widget.hover_style._link_id)
    ):
        return None
    cache = widget._styles_cache
    size = widget.region.size
    width, height = size
    content_width = widget.content_region.size.width
    if width != cache._width:
        cache.clear()
        cache._width = width
    base_background, background = widget.background_colors
    inner = Style(background=base_background + background).rich_style
    filters = widget.get_line_filters()
    first = 1 if top else 0  # the gutter's top: a border, no padding
    content_height = widget.content_region.size.height
    lines = cache._cache
    dirty = cache._dirty_lines
    strips: list[Strip] = []
    for y in crop.line_range:
        strip = None if y in dirty else lines.get(y)
        if strip is None:
            if (top and y == 0) or (bottom and y == height - 1):
                strip = _box_line(widget, y)
            elif y - first < content_height:
                line = widget.render_line(y - first).adjust_cell_length(content_width, inner)
                # StylesCache wraps it in a new Strip of the widget's width; a strip is
                # ~16 allocations (its caches), so the line itself where it is that wide.
                strip = line if line.cell_length == width else Strip(line, width)
            else:
                strip = Strip.blank(content_width, inner)
            lines[y] = strip
        for line_filter in filters:
            strip = strip.apply_filter(line_filter, background)
        strips.append(strip)
    dirty.difference_update(crop.line_range)
    if crop.column_span != (0, width):
        x1, x2 = crop.column_span
        strips = [strip.crop(x1, x2) for strip in strips]
    return strips


def _box_line(widget: Widget, y: int) -> Strip:
    """One line drawn by StylesCache itself, as `StylesCache.render_widget` calls it."""
    styles = widget.styles
    app = widget.app
    base_background, background = widget.background_colors
    title, subtitle = widget._border_title, widget._border_subtitle
    return widget._styles_cache.render_line(
        styles,
        y,
        widget.region.size,
        widget.content_region.size,
        styles.padding,
        base_background,
        background,
        widget.render_line,
        None if title is None else (title, *widget._get_title_style_information(base_background)),
        None
        if subtitle is None
        else (subtitle, *widget._get_subtitle_style_information(base_background)),
        widget.opacity,
        app.ansi_theme,
        app.native_ansi_color,
    )


class BoxPaint(Widget):
    """A mixin for a Widget whose lines `box_lines` draws where it can."""

    def render_lines(self, crop: Region) -> list[Strip]:
        strips = box_lines(self, crop)
        return strips if strips is not None else super().render_lines(crop)
