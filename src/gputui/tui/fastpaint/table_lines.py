"""DataTable's lines drawn with what they read computed once per render pass.

DataTable recomputes the same styles for every line it draws: the widget's own style
(walking its ancestors), the zebra row styles, the cursor's component styles, the
background colours and the ordered column list, ~0.4 ms a row with every row changing
each poll (the Time column ticks). Within one render pass none of them can change, so
they are computed once per pass and forgotten after it: outside a pass (event handlers,
a theme switch) DataTable's own lookups run as before. A data row whose cells are all
simple texts is drawn as one strip straight from them (`_data_line`).

Overrides DataTable's private methods and uses `textual._segment_tools`: hence fastpaint/
(Textual is pinned to an exact version for it); tests/tui/test_fastpaint_table_lines.py compares
what it draws with DataTable's own.
"""

from __future__ import annotations

from itertools import chain
from typing import Any, cast

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual._segment_tools import line_crop
from textual.color import Color
from textual.coordinate import Coordinate
from textual.css.styles import RenderStyles
from textual.geometry import Region
from textual.strip import Strip
from textual.widgets.data_table import Column as DataTableColumn
from textual.widgets.data_table import ColumnKey, RowKey

from gputui.tui.fastpaint.box_lines import box_lines
from gputui.tui.fastpaint.table_cells import SCREENFUL_CACHE, CellCacheTable
from gputui.tui.views.cell_clip import clipped


class _PassStyles:
    """A component's styles for one render pass: DataTable reads `.rich_style` once a line,
    and each read recomputes it from the ancestors' styles."""

    __slots__ = ("_styles", "_rich")

    def __init__(self, styles: RenderStyles) -> None:
        self._styles = styles
        self._rich: Style | None = None

    @property
    def rich_style(self) -> Style:
        if self._rich is None:
            self._rich = self._styles.rich_style
        return self._rich

    def __getattr__(self, name: str) -> Any:
        return getattr(self._styles, name)


class FastDataTable(CellCacheTable):
    """A row-cursor DataTable drawn a render pass at a time (see the module's docstring)."""

    def render_lines(self, crop: Region) -> list[Strip]:
        self._render_pass = {}
        try:
            self._pseudo_class_state = self.get_pseudo_class_state()  # as DataTable's does
            strips = box_lines(self, crop)  # the rows without StylesCache's per-line box work
            return strips if strips is not None else super().render_lines(crop)
        finally:
            self._render_pass = None

    def render_line(self, y: int) -> Strip:
        """DataTable's own, with what it reads per line (the fixed rows' height, the scroll
        offset, the widget's style: ~15 reactive reads, ~70 us a line) read once a pass."""
        if self._render_pass is None:
            return super().render_line(y)
        fixed_height, scroll_x, scroll_y, width = self._memo("render_line", self._line_consts)
        if y >= fixed_height:
            y += scroll_y
        return self._render_line(y, scroll_x, scroll_x + width, self.rich_style)

    def _line_consts(self) -> tuple[int, int, int, int]:
        fixed_height = 0
        for i in range(self.fixed_rows):
            key = self._row_locations.get_key(i)
            fixed_height += 0 if key is None else self.get_row_height(key)
        if self.show_header:
            fixed_height += self.get_row_height(self._header_row_key)
        scroll_x, scroll_y = self.scroll_offset
        return fixed_height, scroll_x, scroll_y, self.size.width

    @property
    def rich_style(self) -> Style:
        return self._memo("rich_style", lambda: super(FastDataTable, self).rich_style)

    @property
    def background_colors(self) -> tuple[Color, Color]:
        return self._memo("background_colors", lambda: super(FastDataTable, self).background_colors)

    @property
    def ordered_columns(self) -> list[DataTableColumn]:
        return self._memo("ordered_columns", lambda: super(FastDataTable, self).ordered_columns)

    def get_component_rich_style(
        self, *names: str, partial: bool = False, default: Style | None = None
    ) -> Style:
        return self._memo(
            ("component", names, partial, default),
            lambda: super(FastDataTable, self).get_component_rich_style(
                *names, partial=partial, default=default
            ),
        )

    def _render_line_in_row(
        self,
        row_key: RowKey,
        line_no: int,
        base_style: Style,
        cursor_location: Coordinate,
        hover_location: Coordinate,
    ) -> tuple[Any, Any]:
        """DataTable's own, for a row cursor without fixed columns or row labels (this table),
        with what does not change within a render pass read once per pass."""
        if self._render_pass is None:
            return super()._render_line_in_row(
                row_key, line_no, base_style, cursor_location, hover_location
            )
        (show_hover, show_cursor, pseudo, _, cursor_type, fixed, widths, widget_width, label_w) = (
            self._pass_consts()
        )
        if fixed or cursor_type != "row":
            return super()._render_line_in_row(
                row_key, line_no, base_style, cursor_location, hover_location
            )
        cache_key = (
            row_key,
            line_no,
            base_style,
            cursor_location,
            hover_location,
            cursor_type,
            show_cursor,
            show_hover,
            self._update_count,
            pseudo,
        )
        cached = self._row_render_cache.get(cache_key)
        if cached is not None:
            return cached
        found = self._row_locations.get(row_key)
        row_index = -1 if found is None else found
        row_style = self._get_row_style(row_index, base_style)
        cursor = cursor_location.row == row_index
        hover = hover_location.row == row_index
        render_cell = self._render_cell
        scrollable_row = [
            render_cell(row_index, i, row_style, width, cursor=cursor, hover=hover)[line_no]
            for i, width in enumerate(widths)
        ]
        remaining = max(0, widget_width - sum(widths) - label_w)
        extend_style = self._memo(
            ("extend", row_index == -1, hover, cursor, row_style),
            lambda: (
                row_style
                + self._get_styles_to_render_cell(
                    row_index == -1,
                    False,
                    False,
                    hover,
                    cursor,
                    show_cursor,
                    show_hover,
                    False,
                    False,
                )[0]
            ),
        )
        extend_style += Style.from_meta({"row": row_index, "column": 0, "out_of_bounds": True})
        scrollable_row.append([Segment(" " * remaining, extend_style)])
        row_pair: tuple[list[Any], list[Any]] = ([], scrollable_row)
        self._row_render_cache[cache_key] = row_pair
        return row_pair

    def _data_line(
        self, row_key: RowKey, y_in_row: int, base_style: Style, width: int
    ) -> Strip | None:
        """A whole data row as one strip, straight from its cells' texts, where the style of
        every cell in this place is known (`_learn_cell_style`) and every text is simple;
        None where not (the cell path then draws it, and learns the styles for next time).

        Every row changes every poll (Time ticks), so each is drawn anew each second, and
        the cell path (a 14-part cache key and two cache lookups per cell, three segments
        that `simplify` merges again, three strips per line) cost ~0.2 ms a row. The
        segments are those of the cell path after `simplify`: one per cell (its padding
        and body share a style) and the filler after the last column.
        """
        consts = self._pass_consts()
        row_index = self._row_locations.get(row_key)
        data_row = self._data.get(row_key)
        if y_in_row or row_index is None or data_row is None:
            return None
        cursor, hover = self._memo(
            "coordinates", lambda: (self.cursor_coordinate, self.hover_coordinate)
        )
        on_cursor, on_hover = cursor.row == row_index, hover.row == row_index
        row_style = self._get_row_style(row_index, base_style)
        key = (row_index, row_style, on_cursor, on_hover, consts)
        known = self._row_styles.get(key)
        if known is None:
            widths = consts[6]
            cells_of: list[tuple[ColumnKey, int, Style]] = []
            for i, w in enumerate(widths):
                ck = self._column_locations.get_key(i)
                style = (
                    None
                    if ck is None
                    else self._cell_styles.get(
                        (row_index, i, ck, row_style, w, on_cursor, on_hover, *consts[:3])
                    )
                )
                if ck is None or style is None:
                    return None
                cells_of.append((ck, w, style))
            extend = self._extend_style(row_index, row_style, on_cursor, on_hover)
            if len(self._row_styles) >= 4 * SCREENFUL_CACHE:
                self._row_styles.clear()
            known = self._row_styles[key] = (tuple(cells_of), extend)
        cells, extend = known
        pad = consts[3]
        bodies = self._bodies
        segments = []
        for column_key, cell_width, style in cells:
            value = data_row.get(column_key)
            if type(value) is not Text or value.spans or value.style:
                return None
            plain = value.plain
            body_key = (plain, cell_width, value.justify, value.overflow)
            body = bodies.get(body_key)
            if body is None:
                if value.justify not in ("left", "right") or value.overflow != "ellipsis":
                    return None
                inner = clipped(plain, cell_width - 2 * pad, value.justify)
                if inner is None and not plain and cell_width > 2 * pad:
                    inner = " " * (cell_width - 2 * pad)  # an empty cell: all blank
                if inner is None:
                    return None
                if len(bodies) >= 16 * SCREENFUL_CACHE:
                    bodies.clear()
                body = bodies[body_key] = " " * pad + inner + " " * pad
            segments.append(Segment(body, style))
        remaining = max(0, width - sum(consts[6]) - consts[8])
        segments.append(Segment(" " * remaining, extend))
        return Strip(segments, max(width, sum(consts[6])))

    def _extend_style(self, row_index: int, row_style: Style, cursor: bool, hover: bool) -> Style:
        """The style of the filler after the last column (DataTable's, as in the cell path)."""
        show_hover, show_cursor = self._pass_consts()[:2]
        return (
            row_style
            + self._get_styles_to_render_cell(
                row_index == -1, False, False, hover, cursor, show_cursor, show_hover, False, False
            )[0]
            + Style.from_meta({"row": row_index, "column": 0, "out_of_bounds": True})
        )

    def _render_line(self, y: int, x1: int, x2: int, base_style: Style) -> Strip:
        """DataTable's own for this table (row cursor, no fixed columns or row labels), with
        the line's length known instead of measured segment by segment: every cell is
        drawn exactly its column's width, and the filler takes the rest of the widget."""
        if self._render_pass is None:
            return super()._render_line(y, x1, x2, base_style)
        (show_hover, _, pseudo, _, cursor_type, fixed, widths, width, label_w) = self._pass_consts()
        if fixed or cursor_type != "row" or label_w:
            return super()._render_line(y, x1, x2, base_style)
        try:
            row_key, y_offset_in_row = self._get_offsets(y)
        except LookupError:
            return Strip.blank(width, base_style)
        cursor, hover = self._memo(
            "coordinates", lambda: (self.cursor_coordinate, self.hover_coordinate)
        )
        cache_key = (
            y,
            x1,
            x2,
            width,
            cursor,
            hover,
            base_style,
            cursor_type,
            show_hover,
            self._update_count,
            pseudo,
        )
        cached = self._line_cache.get(cache_key)
        if cached is not None:
            return cached
        if x1 == 0 and x2 >= width >= sum(widths) and row_key is not self._header_row_key:
            fast = self._data_line(row_key, y_offset_in_row, base_style, width)
            if fast is not None:
                self._line_cache[cache_key] = fast
                return fast
        _, scrollable = self._render_line_in_row(
            row_key, y_offset_in_row, base_style, cursor_location=cursor, hover_location=hover
        )
        segments: list[Segment] = list(chain.from_iterable(scrollable))
        length = max(width, sum(widths))
        if x1 > 0 or x2 < length:
            segments = line_crop(segments, x1, x2, length)
            length = min(x2, length) - x1
        strip = Strip(segments, length).adjust_cell_length(width, base_style).simplify()
        self._line_cache[cache_key] = strip
        return strip

    def get_component_styles(self, *names: str) -> RenderStyles:
        styles = super().get_component_styles(*names)
        if getattr(self, "_render_pass", None) is None:
            return styles
        return cast(RenderStyles, self._memo(("styles", names), lambda: _PassStyles(styles)))

    def _get_row_style(self, row_index: int, base_style: Style) -> Style:
        parity = -1 if row_index == -1 else (row_index < self.fixed_rows, row_index % 2)
        return self._memo(
            ("row_style", parity, base_style),
            lambda: super(FastDataTable, self)._get_row_style(row_index, base_style),
        )
