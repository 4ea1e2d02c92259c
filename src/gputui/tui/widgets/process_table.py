"""The GPU process table, updated in place and keyed by (GPU, PID).

Rebuilding a DataTable every tick loses the cursor and costs a full relayout;
diffing rows (add / update_cell / remove) keeps the selected process under the
cursor while others come and go.

`t` shows the processes as a tree under their parents (read on demand, off the
UI thread, only while the tree is shown); `space` tags rows so that `k` signals
them together. Tags belong to rows on screen: a row that leaves (the process
exited, or the filter hides it) loses its tag.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Hashable, Mapping, Sequence
from itertools import chain
from typing import Any, TypeVar, cast

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import work
from textual._segment_tools import line_crop
from textual.binding import Binding
from textual.cache import LRUCache
from textual.color import Color
from textual.coordinate import Coordinate
from textual.css.styles import RenderStyles
from textual.geometry import Region
from textual.strip import Strip
from textual.widgets import DataTable
from textual.widgets.data_table import Column as DataTableColumn
from textual.widgets.data_table import ColumnKey, RowDoesNotExist, RowKey

from gputui.model.snapshot import GpuProcess
from gputui.tui.views.process_columns import _BY_KEY as _BY_KEY
from gputui.tui.views.process_columns import COLUMN_KEYS as COLUMN_KEYS
from gputui.tui.views.process_columns import COLUMNS as COLUMNS
from gputui.tui.views.process_columns import COMMAND_MIN as COMMAND_MIN
from gputui.tui.views.process_columns import COMMAND_WIDTH, Column
from gputui.tui.views.process_columns import empty_columns as empty_columns
from gputui.tui.views.process_columns import matches as matches
from gputui.tui.views.process_columns import row_key as row_key
from gputui.tui.views.process_columns import sort_key as sort_key
from gputui.tui.views.process_columns import visible_columns as visible_columns
from gputui.tui.views.process_tree import Ancestors, TreeRow, layout
from gputui.tui.widgets.box_lines import box_lines

# Reads each PID's parent chain (gputui.sources.host.source.read_ancestors); may block.
ParentsOf = Callable[[Sequence[int]], Mapping[int, Ancestors]]
TAG_MARK = "● "
_T = TypeVar("_T")
_CellPlace = tuple[ColumnKey, int, Style]  # a column, its width, a cell's style in one row place
SCREENFUL_CACHE = 256  # lines: the tallest terminal's table, with room for cursor moves


def _styled(column: Column, value: str) -> Text:
    """Numbers right-aligned so magnitudes line up; markup in commands stays literal."""
    return Text(
        value,
        justify="right" if column.right else "left",
        no_wrap=True,
        overflow="ellipsis",
        end="",
    )


def fitted(plain: str, width: int, justify: str) -> str | None:
    """What Rich draws for a one-line, unstyled Text with ellipsis overflow in `width` cells.

    None where only Rich can say: anything but printable ASCII (wide characters,
    control codes, line breaks) or no room at all.
    """
    if width < 1 or not (plain.isascii() and plain.isprintable()):
        return None
    if justify == "right":
        plain = plain.rstrip()
    if not plain:  # Rich emits an extra empty segment for empty text
        return None
    if len(plain) > width:
        plain = plain[: width - 1] + "…"
    return plain.rjust(width) if justify == "right" else plain.ljust(width)


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


class ProcessTable(DataTable[Any]):
    """Rows are cell strings; the GpuProcess behind each row is kept in `processes`."""

    # DataTable's home/end scroll sideways; in a process list they move the selection.
    BINDINGS = [
        Binding("home", "first_row", "First", show=False),
        Binding("end", "last_row", "Last", show=False),
        # Listed in help (?), not the footer: at 80 columns they would push Kill and Quit out.
        Binding("t", "toggle_tree", "Tree", show=False),
        Binding("space", "toggle_tag", "Tag", show=False),
    ]

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, cursor_type="row", zebra_stripes=True)
        self.processes: dict[str, GpuProcess] = {}
        self._all: Sequence[GpuProcess] = ()
        self.sort_column = "gpu_mem"
        self.sort_reverse = True
        self.filter_text = ""
        self.only_user: str | None = None  # "my processes" (m): this user's rows only
        # DataTable's row, line and cell caches are keyed on its update counter, which moves
        # every poll: only the current count's entries are ever read again, yet its sizes
        # (1000 rows, 1000 lines, 10000 cells) kept ~15 minutes of dead frames in memory
        # after a few minutes. A screenful (and its cursor variants) is what they need.
        self._row_render_cache = LRUCache(SCREENFUL_CACHE)
        self._line_cache = LRUCache(SCREENFUL_CACHE)
        self._row_renderable_cache = LRUCache(SCREENFUL_CACHE)
        self._cell_render_cache = LRUCache(4 * SCREENFUL_CACHE)
        # Ours is keyed by what a cell shows: ~4 screenfuls of cells (a changed cell is a
        # new entry each poll, so a bigger cache only holds old values longer).
        self._content_cell_cache: LRUCache[tuple[Any, ...], Any] = LRUCache(2000)
        self._cell_styles: LRUCache[tuple[Any, ...], Style] = LRUCache(4000)
        # _data_line's: each row place's cell styles, and each cell text's padded body.
        self._row_styles: dict[tuple[Any, ...], tuple[tuple[_CellPlace, ...], Style]] = {}
        self._bodies: dict[tuple[str, int, str | None, str | None], str] = {}
        self._cells: dict[str, list[str]] = {}  # what each row shows, to diff the next poll against
        self._column_keys: dict[str, ColumnKey] = {}
        self.shown: tuple[Column, ...] = COLUMNS  # what fits the width (visible_columns)
        self.empty: frozenset[str] = frozenset()  # columns hidden for having no values
        self.user_hidden: frozenset[str] = frozenset()  # settings.toml's hidden_columns
        self.tree_view = False
        self.tagged: set[str] = set()  # row keys
        self.parents: Mapping[int, Ancestors] = {}
        self.parents_of: ParentsOf | None = None  # None: no parents to read (demo data)
        self._parents_asked: frozenset[int] = frozenset()
        self._looks: dict[str, tuple[GpuProcess | None, str, bool]] = {}  # what _cells shows
        self._render_pass: dict[Hashable, Any] | None = None  # styles of the render pass under way

    def _render_cell(
        self,
        row_index: int,
        column_index: int,
        base_style: Style,
        width: int,
        cursor: bool = False,
        hover: bool = False,
    ) -> Any:
        """DataTable's own cell cache is keyed on a table-wide update counter, so one
        update_cell re-renders every visible cell. Most cells keep their text from one
        poll to the next (PID, user, command...): cache them by what they show.
        Overrides a private method; textual is pinned to an exact version for that reason.
        """
        if column_index < 0 or row_index < -1:
            return super()._render_cell(row_index, column_index, base_style, width, cursor, hover)
        column_key = self._column_locations.get_key(column_index)
        if column_key is None:
            return super()._render_cell(row_index, column_index, base_style, width, cursor, hover)
        row_key: RowKey | None
        if row_index == -1:  # the header: its labels change only with the sort column
            row_key = self._header_row_key
            value: Any = self.columns[column_key].label
        else:
            row_key = self._row_locations.get_key(row_index)
            if row_key is None:
                return super()._render_cell(
                    row_index, column_index, base_style, width, cursor, hover
                )
            value = self._data[row_key][column_key]
        key = (
            row_index,
            column_index,
            row_key,
            column_key,
            str(value),
            base_style,
            width,
            cursor,
            hover,
            *self._pass_consts()[:3],  # hover cursor shown, cursor shown, pseudo classes
        )
        lines = self._content_cell_cache.get(key)
        if lines is None:
            lines = self._render_new_cell(key, value, width)
            if lines is None:
                lines = super()._render_cell(
                    row_index, column_index, base_style, width, cursor, hover
                )
                self._learn_cell_style(key, value, width, lines)
            self._content_cell_cache[key] = lines
        return lines

    # -- one render pass ------------------------------------------------------------------
    # DataTable recomputes the same styles for every line it draws: the widget's own style
    # (walking its ancestors), the zebra row styles, the cursor's component styles, the
    # background colours and the ordered column list, ~0.4 ms a row with every row
    # changing each poll (the Time column ticks). Within one render pass none of them can
    # change, so they are computed once per pass and forgotten after it: outside a pass
    # (event handlers, a theme switch) DataTable's own lookups run as before.

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

    def _memo(self, key: Hashable, compute: Callable[[], _T]) -> _T:
        memo = getattr(self, "_render_pass", None)  # DataTable.__init__ runs before ours
        if memo is None:
            return compute()
        try:
            return cast(_T, memo[key])
        except KeyError:
            value = memo[key] = compute()
            return value

    @property
    def rich_style(self) -> Style:
        return self._memo("rich_style", lambda: super(ProcessTable, self).rich_style)

    @property
    def background_colors(self) -> tuple[Color, Color]:
        return self._memo("background_colors", lambda: super(ProcessTable, self).background_colors)

    @property
    def ordered_columns(self) -> list[DataTableColumn]:
        return self._memo("ordered_columns", lambda: super(ProcessTable, self).ordered_columns)

    def get_component_rich_style(
        self, *names: str, partial: bool = False, default: Style | None = None
    ) -> Style:
        return self._memo(
            ("component", names, partial, default),
            lambda: super(ProcessTable, self).get_component_rich_style(
                *names, partial=partial, default=default
            ),
        )

    def _pass_consts(self) -> tuple[Any, ...]:
        """Reactive settings read per cell and per row: each read costs ~2 us, ~1200 a poll."""
        return self._memo(
            "consts",
            lambda: (
                self._show_hover_cursor,
                self.show_cursor,
                self._pseudo_class_state,
                self.cell_padding,
                self.cursor_type,
                bool(self.fixed_columns) or (self._labelled_row_exists and self.show_row_labels),
                tuple(c.get_render_width(self) for c in self.ordered_columns),
                self.size.width,
                self._row_label_column_width,
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
                inner = fitted(plain, cell_width - 2 * pad, value.justify)
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
            lambda: super(ProcessTable, self)._get_row_style(row_index, base_style),
        )

    def notify_style_update(self) -> None:
        # A theme or focus change can alter cell styles without changing any cache key.
        super().notify_style_update()
        self._clear_own_caches()

    def _clear_caches(self) -> None:
        super()._clear_caches()
        self._clear_own_caches()

    def _clear_own_caches(self) -> None:
        # DataTable calls this from its own __init__, before these exist.
        for cache in (
            getattr(self, "_content_cell_cache", None),
            getattr(self, "_cell_styles", None),
            getattr(self, "_row_styles", None),
        ):
            if cache is not None:
                cache.clear()

    # A cell whose text changed is drawn the way DataTable drew the last text in the same
    # place: the same single style around a new, fitted body. Rich's general path
    # (Styled(Padding(Text)) through Console.render_lines) was most of a refresh's table
    # cost, ~0.12 ms per cell and ~50 cells per poll. The style is learnt from Rich's own
    # output, and only where that output had exactly the shape reproduced here.

    @staticmethod
    def _style_key(key: tuple[Any, ...]) -> tuple[Any, ...]:
        """The cache key without the row key and the text: what decides a cell's style."""
        return key[:2] + key[3:4] + key[5:]

    def _simple_body(self, value: Any, width: int) -> str | None:
        if type(value) is not Text or value.spans or value.style:
            return None
        inner = width - 2 * self._pass_consts()[3]
        if value.justify not in ("left", "right") or value.overflow != "ellipsis":
            return None
        return fitted(value.plain, inner, value.justify)

    def _render_new_cell(self, key: tuple[Any, ...], value: Any, width: int) -> Any:
        if key[0] < 0:
            return None
        style = self._cell_styles.get(self._style_key(key))
        if style is None:
            return None
        body = self._simple_body(value, width)
        if body is None:
            return None
        pad = " " * self._pass_consts()[3]
        return [[Segment(pad, style), Segment(body, style), Segment(pad, style)]]

    def _learn_cell_style(self, key: tuple[Any, ...], value: Any, width: int, lines: Any) -> None:
        if key[0] < 0 or self.cell_padding < 1:
            return
        if len(lines) != 1 or not lines[0]:
            return
        style = lines[0][0].style
        pad = " " * self.cell_padding
        body = self._simple_body(value, width)
        if body is not None:
            shape = [Segment(pad, style), Segment(body, style), Segment(pad, style)]
        elif type(value) is Text and not value.plain and not value.spans and not value.style:
            # An empty cell (no container): Rich draws an empty segment, then the blank.
            blank = " " * (width - 2 * self.cell_padding)
            shape = [Segment(pad, style), Segment("", style), Segment(blank, style)]
            shape.append(Segment(pad, style))
        else:
            return
        if lines[0] == shape:
            self._cell_styles[self._style_key(key)] = style

    def on_mount(self) -> None:
        self._add_columns()

    def _add_columns(self) -> None:
        # Fixed widths: DataTable re-measures every cell of a column after each update_cell
        # when widths are automatic, which cost more than everything else in a refresh.
        self._column_keys.clear()
        for c in self.shown:
            label = Text(c.label, justify="right" if c.right else "left")
            self._column_keys[c.key] = self.add_column(
                label, key=c.key, width=c.room if c.width else COMMAND_WIDTH
            )
        self._refresh_header_labels()
        self._fit_command_column()

    def on_resize(self) -> None:
        self._choose_columns()

    def _choose_columns(self) -> None:
        width = self.size.width
        hidden = self.empty | self.user_hidden
        shown = visible_columns(width, self.cell_padding, hidden) if width else COLUMNS
        if shown != self.shown:
            # Rare (a resize across a threshold): rebuild columns and rows at the new set.
            self.shown = shown
            selected = self.selected
            self.clear(columns=True)
            self.processes.clear()
            self._cells.clear()
            self._looks.clear()
            self._add_columns()
            self._apply(keep=row_key(selected) if selected is not None else None)
        self._fit_command_column()

    def _fit_command_column(self) -> None:
        if not self.columns:
            return
        fixed = sum(c.room for c in self.shown if c.width)
        fixed += 2 * self.cell_padding * len(self.shown)
        width = max(COMMAND_MIN, self.size.width - fixed - 1)
        column = self.columns[self._column_key("command")]
        if column.width != width:
            column.width = width
            self._require_update_dimensions = True
            self.refresh()

    # -- public API -----------------------------------------------------------------------

    @property
    def selected(self) -> GpuProcess | None:
        if not self.row_count:
            return None
        try:
            key = self.coordinate_to_cell_key(self.cursor_coordinate).row_key
        except Exception:  # cursor outside the table while rows are being replaced
            return None
        return self.processes.get(str(key.value))

    @property
    def tagged_processes(self) -> list[GpuProcess]:
        """The tagged rows' processes, in display order."""
        return [self.processes[k] for k in self.visible_keys() if k in self.tagged]

    def set_processes(self, processes: Sequence[GpuProcess]) -> None:
        self._all = processes
        empty = empty_columns(processes)
        if empty != self.empty:  # a container process came or went: rare
            self.empty = empty
            self._choose_columns()
        self._apply()
        if self.tree_view:
            self._ask_parents()

    def action_toggle_tree(self) -> None:
        self.tree_view = not self.tree_view
        if self.tree_view:
            self._ask_parents()
            if self.parents_of is None:
                self.notify("tree view: demo processes have no parents to show", timeout=4)
        self._apply()

    def action_toggle_tag(self) -> None:
        """Tag or untag the row under the cursor, then step down (tagging a run of rows)."""
        proc = self.selected
        if proc is None:
            return
        key = row_key(proc)
        self.tagged.symmetric_difference_update({key})
        self._apply()
        if self.cursor_row < self.row_count - 1:
            self.move_cursor(row=self.cursor_row + 1)

    def clear_tags(self) -> None:
        if self.tagged:
            self.tagged.clear()
            self._apply()

    def _ask_parents(self) -> None:
        lookup = self.parents_of
        pids = frozenset(p.pid for p in self._all if p.host_visible)
        if lookup is None:
            if self.parents:
                self.parents = {}
                self._apply()
            return
        if pids == self._parents_asked:
            return  # a parent chain changes only with the processes (or a rare reparenting)
        self._parents_asked = pids
        self._read_parents(lookup, sorted(pids))

    @work(thread=True, exit_on_error=False, exclusive=True, group="process-parents")
    def _read_parents(self, lookup: ParentsOf, pids: list[int]) -> None:
        found = dict(lookup(pids))
        with contextlib.suppress(RuntimeError):  # the app has stopped meanwhile
            self.app.call_from_thread(self._set_parents, found)

    def _set_parents(self, parents: Mapping[int, Ancestors]) -> None:
        self.parents = parents
        if self.tree_view and self.is_attached:
            self._apply()

    def set_filter(self, text: str) -> None:
        self.filter_text = text
        self._apply()

    def set_user_hidden(self, keys: frozenset[str]) -> None:
        """Columns the user never wants (settings.toml), on top of the empty ones."""
        self.user_hidden = keys
        self._choose_columns()

    def set_only_user(self, user: str | None) -> None:
        """Only `user`'s processes (None: everyone's)."""
        self.only_user = user
        self._apply()

    def set_sort(self, column: str, reverse: bool | None = None) -> None:
        if column not in _BY_KEY:
            raise ValueError(f"unknown column {column!r}")
        if reverse is None:
            # Clicking the current column flips it; a new column starts largest-first for numbers.
            reverse = (
                not self.sort_reverse
                if column == self.sort_column
                else column
                not in (
                    "gpu",
                    "pid",
                    "container",
                    "user",
                    "type",
                    "command",
                )
            )
        self.sort_column, self.sort_reverse = column, reverse
        self._refresh_header_labels()
        self._apply()

    def cycle_sort(self) -> None:
        """The next column on screen (a column that gave way to the width is skipped)."""
        keys = [c.key for c in self.shown]
        if self.sort_column in keys:
            self.set_sort(keys[(keys.index(self.sort_column) + 1) % len(keys)])
        else:
            self.set_sort(keys[0])

    def action_first_row(self) -> None:
        if self.row_count:
            self.move_cursor(row=0)

    def action_last_row(self) -> None:
        if self.row_count:
            self.move_cursor(row=self.row_count - 1)

    @property
    def settled(self) -> bool:
        """DataTable measures new rows when idle; screenshots wait for that to happen."""
        return not self._require_update_dimensions and not self._updated_cells

    def visible_keys(self) -> list[str]:
        """Row keys in display order (for tests and the details line)."""
        get_key = self._row_locations.get_key  # what coordinate_to_cell_key reads, per row
        return [str(cast(RowKey, get_key(i)).value) for i in range(self.row_count)]

    def row_text(self, key: str) -> list[str]:
        """What the row `key` shows, cell by cell (for tests)."""
        return list(self._cells[key])

    # -- internals ------------------------------------------------------------------------

    def _refresh_header_labels(self) -> None:
        if not self.columns:
            return
        for c in self.shown:
            arrow = (" ▼" if self.sort_reverse else " ▲") if c.key == self.sort_column else ""
            col = self.columns[self._column_key(c.key)]
            col.label = Text(c.label + arrow, justify="right" if c.right else "left")
        # DataTable caches rendered rows (the header too) by its update counter: without a
        # bump, a sort that leaves the row order alone kept drawing the old arrow.
        self._update_count += 1
        self._require_update_dimensions = True
        self.refresh()

    def _column_key(self, key: str) -> Any:
        for ck in self.columns:
            if ck.value == key:
                return ck
        raise KeyError(key)

    def _rows(self) -> list[TreeRow]:
        """Rows to show, in display order: sorted, or as a tree under their parents."""
        user = self.only_user
        wanted = [
            (row_key(p), p)
            for p in self._all
            if matches(p, self.filter_text) and (user is None or p.user == user)
        ]
        skey = sort_key(self.sort_column, self.sort_reverse)
        wanted.sort(key=lambda kp: skey(kp[1]), reverse=self.sort_reverse)
        if self.tree_view:
            return layout(wanted, self.parents)
        return [TreeRow(k, p.pid, "", proc=p) for k, p in wanted]

    def _row_cells(self, row: TreeRow, tagged: bool) -> list[str]:
        mark = TAG_MARK if tagged else ""
        proc = row.proc
        if proc is None:  # a parent that holds no GPU context: its PID and name
            return [
                str(row.pid)
                if c.key == "pid"
                else row.prefix + row.name
                if c.key == "command"
                else ""
                for c in self.shown
            ]
        cells = [c.cell(proc) for c in self.shown]
        if mark or row.prefix:
            cells[-1] = mark + row.prefix + cells[-1]  # the command is always the last column
        return cells

    def _apply(self, keep: str | None = None) -> None:
        if not self.columns:
            return
        selected = self.selected
        selected_key = row_key(selected) if selected is not None else keep
        if selected_key is None and self.row_count:
            with contextlib.suppress(Exception):  # a parent row is under the cursor
                selected_key = str(
                    self.coordinate_to_cell_key(self.cursor_coordinate).row_key.value
                )
        shown = self.shown
        rows = self._rows()
        keys = {r.key for r in rows}
        self.tagged &= keys

        for key in [k for k in self._cells if k not in keys]:
            self.processes.pop(key, None)
            self._looks.pop(key, None)
            del self._cells[key]
            self.remove_row(key)
        changed = False
        data = self._data
        for row in rows:
            key = row.key
            tagged = key in self.tagged
            look = (row.proc, row.prefix, tagged)
            old = self._looks.get(key)
            if old is None:
                cells = self._cells[key] = self._row_cells(row, tagged)
                self.add_row(*(_styled(c, v) for c, v in zip(shown, cells, strict=True)), key=key)
            elif old != look:
                cells = self._row_cells(row, tagged)
                prev_cells = self._cells[key]
                data_row = data[RowKey(key)]
                for i, (c, new, prev) in enumerate(zip(shown, cells, prev_cells, strict=True)):
                    if new != prev:
                        # What DataTable.update_cell does, with one refresh for the whole poll
                        # instead of one per cell (~90 cells change per poll with 8 GPUs).
                        data_row[self._column_keys[c.key]] = _styled(c, new)
                        prev_cells[i] = new
                        changed = True
            self._looks[key] = look
            if row.proc is not None:
                self.processes[key] = row.proc
        if changed:
            self._update_count += 1
            self.refresh()

        order = [r.key for r in rows]
        if order != self.visible_keys():
            # sort() hands over the cells' texts: the rank is found by the (GPU, PID) shown.
            shown_cells = self._cells
            rank = {(shown_cells[k][0], shown_cells[k][1]): i for i, k in enumerate(order)}
            self.sort("gpu", "pid", key=lambda gp: rank[(str(gp[0]), str(gp[1]))])

        if selected_key is not None and selected_key in self._cells:
            self._move_to(selected_key)

    def _move_to(self, key: str) -> None:
        try:
            index = self.get_row_index(RowKey(key))
        except RowDoesNotExist:
            return
        if index != self.cursor_row:
            self.move_cursor(row=index, animate=False, scroll=False)

    def on_data_table_header_selected(self, event: DataTable.HeaderSelected) -> None:
        event.stop()
        self.set_sort(str(event.column_key.value))
