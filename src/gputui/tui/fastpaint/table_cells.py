"""DataTable's cells drawn from a cache keyed by what they show, and its render-pass memo.

DataTable's own cell cache is keyed on a table-wide update counter, so one changed cell
re-renders every visible cell; with every row changing each poll (the Time column ticks)
that was most of a refresh. `CellCacheTable` keeps cells by their text, learns each row
place's cell style from DataTable's own output, and gives the widget above it public
methods for what it needs of DataTable's internals (setting cells without a refresh each,
the rows in display order, whether the table has settled).

Overrides and reads DataTable's private methods and caches: hence fastpaint/ (Textual is
pinned to an exact version for it); tests/tui/test_fastpaint_table_cells.py compares what it
draws with DataTable's own.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any, TypeVar, cast

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.cache import LRUCache
from textual.widgets import DataTable
from textual.widgets.data_table import ColumnKey, RowKey

from gputui.tui.views.cell_clip import clipped

_T = TypeVar("_T")
_CellPlace = tuple[ColumnKey, int, Style]  # a column, its width, a cell's style in one row place
SCREENFUL_CACHE = 256  # lines: the tallest terminal's table, with room for cursor moves


class CellCacheTable(DataTable[Any]):
    """A DataTable whose cells are kept by what they show (see the module's docstring)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
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
        self._sibling_styles: LRUCache[tuple[Any, ...], Style] = LRUCache(400)
        # _data_line's: each row place's cell styles, and each cell text's padded body.
        self._row_styles: dict[tuple[Any, ...], tuple[tuple[_CellPlace, ...], Style]] = {}
        self._bodies: dict[tuple[str, int, str | None, str | None], str] = {}
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

    def _memo(self, key: Hashable, compute: Callable[[], _T]) -> _T:
        memo = getattr(self, "_render_pass", None)  # DataTable.__init__ runs before ours
        if memo is None:
            return compute()
        try:
            return cast(_T, memo[key])
        except KeyError:
            value = memo[key] = compute()
            return value

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
            getattr(self, "_sibling_styles", None),
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
        return clipped(value.plain, inner, value.justify)

    def _sibling_key(self, key: tuple[Any, ...]) -> tuple[Any, ...]:
        """A cell's style key without its row: rows of one parity (the row style is in the
        key) differ only by the row number in the style's meta (DataTable's `from_meta`)."""
        return (key[0] < self.fixed_rows, *self._style_key(key)[1:])

    def _sibling_style(self, key: tuple[Any, ...]) -> Style | None:
        """The style learnt in another row of the same place, with this row's meta: on the
        first frame every row is new, and Rich's path for each of its cells was most of
        the frame (~0.4 ms a cell, ~400 cells for 40 processes)."""
        learnt = self._sibling_styles.get(self._sibling_key(key))
        if learnt is None:
            return None
        style = learnt + Style.from_meta({"row": key[0], "column": key[1]})
        self._cell_styles[self._style_key(key)] = style
        return style

    def _render_new_cell(self, key: tuple[Any, ...], value: Any, width: int) -> Any:
        if key[0] < 0:
            return None
        style = self._cell_styles.get(self._style_key(key)) or self._sibling_style(key)
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
            if style.meta == {"row": key[0], "column": key[1]}:  # nothing else row-bound
                self._sibling_styles[self._sibling_key(key)] = style

    # -- what the widget above needs of DataTable's internals -------------------------------

    def set_cell_quietly(self, row: str, column: ColumnKey, value: Any) -> None:
        """What DataTable.update_cell does to the data, without its refresh: a caller that
        changes many cells calls `cells_changed` once after them."""
        self._data[RowKey(row)][column] = value

    def cells_changed(self) -> None:
        """Redraw after `set_cell_quietly`: DataTable's row caches follow its update count."""
        self._update_count += 1
        self.refresh()

    def remeasure(self, *, recache: bool = False) -> None:
        """Measure the rows again (a column's width or label changed); `recache` also drops
        the rendered rows (a header label: otherwise the old one stays drawn)."""
        if recache:
            self._update_count += 1
        self._require_update_dimensions = True
        self.refresh()

    @property
    def settled(self) -> bool:
        """DataTable measures new rows when idle; screenshots wait for that to happen."""
        return not self._require_update_dimensions and not self._updated_cells

    def row_keys(self) -> list[str]:
        """Row keys in display order."""
        get_key = self._row_locations.get_key  # what coordinate_to_cell_key reads, per row
        return [str(cast(RowKey, get_key(i)).value) for i in range(self.row_count)]
