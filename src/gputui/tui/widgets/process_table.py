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
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from rich.text import Text
from textual import work
from textual.binding import Binding
from textual.widgets import DataTable
from textual.widgets.data_table import ColumnKey, RowDoesNotExist, RowKey

from gputui.model.snapshot import GpuProcess
from gputui.tui.fastpaint.table_lines import FastDataTable
from gputui.tui.views.process_columns import BY_KEY, COMMAND_WIDTH, Column, default_reverse
from gputui.tui.views.process_columns import COLUMN_KEYS as COLUMN_KEYS
from gputui.tui.views.process_columns import COLUMNS as COLUMNS
from gputui.tui.views.process_columns import COMMAND_MIN as COMMAND_MIN
from gputui.tui.views.process_columns import empty_columns as empty_columns
from gputui.tui.views.process_columns import matches as matches
from gputui.tui.views.process_columns import row_key as row_key
from gputui.tui.views.process_columns import sort_key as sort_key
from gputui.tui.views.process_columns import visible_columns as visible_columns
from gputui.tui.views.process_rows import TAG_MARK as TAG_MARK
from gputui.tui.views.process_rows import command_width, ordered_rows, row_cells
from gputui.tui.views.process_tree import Ancestors

COMMAND_STEP = 8  # characters per left/right press

# Reads each PID's parent chain (gputui.sources.host.source.read_ancestors); may block.
ParentsOf = Callable[[Sequence[int]], Mapping[int, Ancestors]]


def styled(column: Column, value: str) -> Text:
    """Numbers right-aligned so magnitudes line up; markup in commands stays literal."""
    return Text(
        value,
        justify="right" if column.right else "left",
        no_wrap=True,
        overflow="ellipsis",
        end="",
    )


class ProcessTable(FastDataTable):
    """Rows are cell strings; the GpuProcess behind each row is kept in `processes`."""

    # DataTable's home/end scroll sideways; in a process list they move the selection.
    BINDINGS = [
        Binding("home", "first_row", "First", show=False),
        Binding("end", "last_row", "Last", show=False),
        # Listed in help (?), not the footer: at 80 columns they would push Kill and Quit out.
        Binding("t", "toggle_tree", "Tree", show=False),
        Binding("space", "toggle_tag", "Tag", show=False),
        # The command column scrolls sideways (nvitop's left/right): a long command line
        # is cut at the column's edge.
        Binding("right", "scroll_command(1)", "Command →", show=False),
        Binding("left", "scroll_command(-1)", "Command ←", show=False),
    ]

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, cursor_type="row", zebra_stripes=True)
        self.processes: dict[str, GpuProcess] = {}
        self._all: Sequence[GpuProcess] = ()
        self.sort_column = "gpu_mem"
        self.sort_reverse = True
        self.filter_text = ""
        self.only_user: str | None = None  # "my processes" (m): this user's rows only
        self.command_offset = 0  # characters of the command scrolled out on the left
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
        self._looks: dict[str, tuple[GpuProcess | None, str, bool, int]] = {}  # what _cells shows

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
        width = command_width(self.shown, self.size.width, self.cell_padding)
        column = self.columns[self._column_key("command")]
        if column.width != width:
            column.width = width
            self.remeasure()

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

    def action_scroll_command(self, direction: int) -> None:
        """Command text COMMAND_STEP characters further (or back); never past its end."""
        command = BY_KEY["command"].cell
        longest = max((len(command(p)) for p in self.processes.values()), default=0)
        offset = max(0, min(self.command_offset + direction * COMMAND_STEP, longest - 1))
        offset -= offset % COMMAND_STEP
        if offset != self.command_offset:
            self.command_offset = offset
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
        if column not in BY_KEY:
            raise ValueError(f"unknown column {column!r}")
        if reverse is None:
            # Clicking the current column flips it; a new column starts largest-first for numbers.
            reverse = (
                not self.sort_reverse if column == self.sort_column else default_reverse(column)
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

    def visible_keys(self) -> list[str]:
        """Row keys in display order (for tests and the details line)."""
        return self.row_keys()

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
        self.remeasure(recache=True)

    def _column_key(self, key: str) -> Any:
        for ck in self.columns:
            if ck.value == key:
                return ck
        raise KeyError(key)

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
        rows = ordered_rows(
            self._all,
            needle=self.filter_text,
            user=self.only_user,
            column=self.sort_column,
            reverse=self.sort_reverse,
            parents=self.parents if self.tree_view else None,
        )
        keys = {r.key for r in rows}
        self.tagged &= keys

        for key in [k for k in self._cells if k not in keys]:
            self.processes.pop(key, None)
            self._looks.pop(key, None)
            del self._cells[key]
            self.remove_row(key)
        changed = False
        for row in rows:
            key = row.key
            tagged = key in self.tagged
            look = (row.proc, row.prefix, tagged, self.command_offset)
            old = self._looks.get(key)
            if old is None:
                cells = self._cells[key] = row_cells(row, self.shown, tagged, self.command_offset)
                self.add_row(*(styled(c, v) for c, v in zip(shown, cells, strict=True)), key=key)
            elif old != look:
                cells = row_cells(row, self.shown, tagged, self.command_offset)
                prev_cells = self._cells[key]
                for i, (c, new, prev) in enumerate(zip(shown, cells, prev_cells, strict=True)):
                    if new != prev:
                        # What DataTable.update_cell does, with one refresh for the whole poll
                        # instead of one per cell (~90 cells change per poll with 8 GPUs).
                        self.set_cell_quietly(key, self._column_keys[c.key], styled(c, new))
                        prev_cells[i] = new
                        changed = True
            self._looks[key] = look
            if row.proc is not None:
                self.processes[key] = row.proc
        if changed:
            self.cells_changed()

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
