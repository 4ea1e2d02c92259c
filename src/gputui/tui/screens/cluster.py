"""The cluster view's screens: hosts and GPUs across the fleet, and one host's GPUs and processes.

Read-only by design: nothing here signals a process (the processes shown run
on other machines; gputui has no business killing them through Prometheus).
Everything displayed comes from `ClusterSnapshot`s the app hands over; the
screens own no polling.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Input, Static

from gputui.core.textsafe import markup_safe
from gputui.model.cluster import ClusterHost, ClusterSnapshot
from gputui.render.cluster_text import age_text, idle_held_line, users_line
from gputui.sources.prometheus.view import ViewData
from gputui.tui.views import cluster_rows as rows
from gputui.tui.views.cluster_rows import Column, History

CSS_PATH = Path(__file__).with_name("cluster.tcss")  # the App's: both screens use it
AGES_EVERY_S = 5.0  # host ages between refreshes, while Prometheus answers


class SortedTable(DataTable[Any]):
    """A DataTable refilled from rows, keeping the cursor on the same key."""

    def __init__(
        self, columns: tuple[Column, ...], *, id: str, min_width: dict[str, int] | None = None
    ) -> None:
        super().__init__(id=id, cursor_type="row", zebra_stripes=True)
        self.all_columns = columns
        # column key -> the terminal width it needs to be shown (absent: always shown)
        self.min_width = min_width or {}
        self.spec = columns
        self.sort_column = columns[0].key
        self.sort_reverse = False
        self.filter_text = ""
        self.keys: list[str] = []
        self._shown: dict[str, list[str]] = {}
        self._sort_shown: tuple[str, bool] | None = None

    def on_mount(self) -> None:
        self.spec = self._fitting()
        for c in self.spec:
            self.add_column(c.label, key=c.key)

    def _fitting(self) -> tuple[Column, ...]:
        """The columns this terminal's width has room for: the others give way by priority."""
        width = self.app.size.width
        return tuple(c for c in self.all_columns if width >= self.min_width.get(c.key, 0))

    def on_resize(self) -> None:
        spec = self._fitting()
        if spec == self.spec:
            return
        self.spec = spec
        self.clear(columns=True)
        for c in spec:
            self.add_column(c.label, key=c.key)
        self.keys, self._shown, self._sort_shown = [], {}, None
        redraw = getattr(self.screen, "_redraw", None)
        if callable(redraw):
            self.call_later(redraw)

    def column_spec(self) -> Column:
        return next(c for c in self.all_columns if c.key == self.sort_column)

    def cycle_sort(self) -> None:
        keys = [c.key for c in self.spec]
        self.sort_column = keys[(keys.index(self.sort_column) + 1) % len(keys)]

    def fill(self, items: list[tuple[str, Any]]) -> None:
        """`items` are (key, row) already sorted and filtered.

        Same rows in the same order (the usual refresh): only the cells whose
        text changed are updated, so the cursor and scroll stay put and a 512-GPU
        table is not rebuilt every second. Anything else: the table is refilled,
        and the cursor follows the row it was on.
        """
        texts = [[c.cell(row) for c in self.spec] for _, row in items]
        keys = [key for key, _ in items]
        if keys == self.keys and self.row_count == len(keys) and not self._grows(keys, texts):
            for key, cells in zip(keys, texts, strict=True):
                shown = self._shown.get(key)
                old: list[str | None] = list(shown) if shown else [None] * len(cells)
                for c, text, before in zip(self.spec, cells, old, strict=True):
                    if text != before:
                        self.update_cell(key, c.key, self._text(c, text))
                self._shown[key] = cells
        else:
            selected = self.selected_key()
            self.clear()
            self.keys = keys
            self._shown = {}
            for key, cells in zip(keys, texts, strict=True):
                self.add_row(
                    *(self._text(c, t) for c, t in zip(self.spec, cells, strict=True)), key=key
                )
                self._shown[key] = cells
            if selected in self.keys:
                self.move_cursor(row=self.keys.index(selected), animate=False)
        sort = (self.sort_column, self.sort_reverse)
        if sort != self._sort_shown:
            self._sort_shown = sort
            for c in self.spec:  # the sorted column says so in its header
                mark = (" ▼" if self.sort_reverse else " ▲") if c.key == self.sort_column else ""
                self.columns[c.key].label = Text(c.label + mark)  # type: ignore[index]
            self.refresh()

    def _grows(self, keys: list[str], texts: list[list[str]]) -> bool:
        """A cell wider than its column has been: DataTable's in-place update keeps the old
        column width on screen ("down (si"), so the table is refilled instead (rare)."""
        widths = [max((len(cells[i]) for cells in self._shown.values()), default=0)
                  for i in range(len(self.spec))]  # fmt: skip
        return any(len(t) > w for cells in texts for t, w in zip(cells, widths, strict=True))

    def update_rows(self, items: list[tuple[str, Any]]) -> None:
        """Redraw these rows' changed cells only (rows already shown, in place); a cell that
        outgrows its column (an age of "100s") has the screen refill the table instead."""
        grown = [
            (key, [c.cell(row) for c in self.spec]) for key, row in items if key in self._shown
        ]
        if self._grows([k for k, _ in grown], [cells for _, cells in grown]):
            redraw = getattr(self.screen, "_redraw", None)
            if callable(redraw):
                self.keys = []  # not the rows shown: fill() refills
                redraw()
                return
        for key, row in items:
            shown = self._shown.get(key)
            if shown is None:
                continue
            cells = [c.cell(row) for c in self.spec]
            for c, text, before in zip(self.spec, cells, shown, strict=True):
                if text != before:
                    self.update_cell(key, c.key, self._text(c, text))
            self._shown[key] = cells

    def visible_keys(self) -> list[str]:
        """The keys of the rows on screen (all of the first screenful before the first layout)."""
        height = self.size.height - self.header_height if self.size.height else 60
        top = int(self.scroll_offset.y)
        return self.keys[top : top + height]

    @staticmethod
    def _text(c: Column, text: str) -> Text:
        return Text(text, justify="right" if c.right else "left")

    def selected_key(self) -> str | None:
        if 0 <= self.cursor_row < len(self.keys):
            return self.keys[self.cursor_row]
        return None


class _SortingScreen(Screen[None]):
    """The `s`/`r` keys of both cluster screens: they sort the focused table, else the main one."""

    MAIN_TABLE: str  # the id of the table sorted while none has focus

    def _redraw(self) -> None:
        raise NotImplementedError

    def _focused_table(self) -> SortedTable:
        focused = self.focused
        if isinstance(focused, SortedTable):
            return focused
        return self.query_one(f"#{self.MAIN_TABLE}", SortedTable)

    def action_cycle_sort(self) -> None:
        self._focused_table().cycle_sort()
        self._redraw()

    def action_reverse_sort(self) -> None:
        table = self._focused_table()
        table.sort_reverse = not table.sort_reverse
        self._redraw()


class ClusterScreen(_SortingScreen):
    """Hosts on top, the GPUs of the hosts on screen below; `/` filters, `s`/`r` sort the
    focused table."""

    BINDINGS = [
        Binding("s", "cycle_sort", "Sort"),
        Binding("r", "reverse_sort", "Reverse", show=False),
        Binding("slash", "filter", "Filter", key_display="/"),
        Binding("escape", "clear_filter", "Clear filter", show=False),
    ]
    MAIN_TABLE = "cluster-hosts"

    def __init__(self, url: str) -> None:
        super().__init__()
        self.url = url
        self.view: ViewData | None = None
        self.history: History = {}
        self._by_host: dict[str, list[list[float]]] = {}
        self._shown_at = self._aged_at = time.monotonic()
        self._behind = False  # the banner is up: Prometheus does not answer

    def compose(self) -> ComposeResult:
        yield Static(f"gputui cluster  {markup_safe(self.url)}", id="cluster-info")
        yield Static("", id="cluster-banner", classes="hidden")
        yield Static("Hosts", classes="cluster-title")
        yield SortedTable(rows.HOST_COLUMNS, id="cluster-hosts", min_width=rows.HOST_MIN_WIDTH)
        yield Static("", id="cluster-people")
        yield Input(placeholder="filter hosts and GPUs (escape clears)", id="cluster-filter")
        yield Static("GPUs of the hosts on screen", classes="cluster-title")
        yield SortedTable(rows.GPU_COLUMNS, id="cluster-gpus", min_width=rows.GPU_MIN_WIDTH)
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#cluster-hosts", SortedTable).focus()
        # Ages keep counting between snapshots (and while Prometheus is down): the host
        # rows on screen are redrawn each second; unchanged cells are not touched.
        self.set_interval(1.0, self._tick, name="cluster-ages")

    # --- data ---------------------------------------------------------------------
    def show(self, view: ViewData, history: History) -> None:
        self.view = view
        if history is not self.history:
            self.history = history
            self._by_host = rows.history_by_host(history)
        self._shown_at = self._aged_at = self._now()
        held = ((h.name, h.gpus_idle_held) for h in view.hosts)
        people = users_line(view.users) + "\n" + idle_held_line(held)
        self.query_one("#cluster-people", Static).update(
            Text(people, no_wrap=True, overflow="ellipsis")
        )
        self._redraw()

    @property
    def cluster(self) -> ClusterSnapshot | None:
        """The GPUs read this refresh (the hosts on screen)."""
        return self.view.detail if self.view is not None else None

    def _now(self) -> float:
        clock = getattr(self.app, "monotonic", None)
        return float(clock()) if callable(clock) else time.monotonic()

    def _since_shown(self) -> float:
        """Whole seconds since the snapshot arrived (whole: a redraw within the first second
        of a snapshot shows the age it came with)."""
        return float(int(self._now() - self._shown_at))

    def _host_rows(self) -> list[dict[str, Any]]:
        assert self.view is not None
        return rows.host_rows(
            self.view.hosts, self._by_host, self._since_shown(), reachable=not self._behind
        )

    def _tick(self) -> None:
        """Each second: which hosts are on screen; the ages of their rows each second while
        Prometheus does not answer, else every AGES_EVERY_S (redrawing a column of ages costs
        more than the refresh it sits between)."""
        if self.view is None:
            return
        now = self._now()
        every = 1.0 if self._behind else AGES_EVERY_S
        if now - self._aged_at < every - 0.01:
            self._want_on_screen()
            return
        self._aged_at = now
        hosts_table = self.query_one("#cluster-hosts", SortedTable)
        on_screen = set(hosts_table.visible_keys())
        by_name = {h.name: h for h in self.view.hosts if h.name in on_screen}
        facts = rows.host_rows(
            list(by_name.values()), self._by_host, self._since_shown(), reachable=not self._behind
        )
        hosts_table.update_rows([(r["host"], r) for r in facts])
        self._want_on_screen()

    def _want_on_screen(self) -> None:
        hosts_table = self.query_one("#cluster-hosts", SortedTable)
        names = set(hosts_table.visible_keys())
        selected = hosts_table.selected_key()
        if selected is not None:
            names.add(selected)
        want = getattr(self.app, "want_hosts", None)
        if callable(want):
            want(frozenset(names))

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.data_table.id == "cluster-hosts":
            self._want_on_screen()

    def _redraw_hosts(self) -> None:
        if self.view is None:
            return
        hosts_table = self.query_one("#cluster-hosts", SortedTable)
        needle = hosts_table.filter_text
        hrows = [r for r in self._host_rows() if rows.host_matches(r, needle)]
        hrows = rows.sorted_rows(hrows, hosts_table.column_spec(), hosts_table.sort_reverse)
        hosts_table.fill([(r["host"], r) for r in hrows])

    def _redraw(self) -> None:
        cluster = self.cluster
        if cluster is None:
            return
        self._redraw_hosts()
        gpus_table = self.query_one("#cluster-gpus", SortedTable)
        needle = gpus_table.filter_text
        grows = [
            r
            for r in rows.gpu_rows(cluster.hosts, self.history, reachable=not self._behind)
            if rows.gpu_matches(r, needle)
        ]
        grows = rows.sorted_rows(grows, gpus_table.column_spec(), gpus_table.sort_reverse)
        gpus_table.fill([(r.key, r) for r in grows])
        self._want_on_screen()

    def show_info(self, text: str) -> None:
        self.query_one("#cluster-info", Static).update(text)

    def show_banner(self, text: str | None) -> None:
        behind = text is not None
        changed = behind != self._behind
        self._behind = behind
        banner = self.query_one("#cluster-banner", Static)
        banner.set_class(text is None, "hidden")
        banner.update(markup_safe(text) if text else "")
        for table in self.query(SortedTable):
            table.set_class(text is not None, "outdated")
        if changed:
            self._redraw()  # the states: "unknown" while Prometheus does not answer

    # --- actions ------------------------------------------------------------------
    def action_filter(self) -> None:
        box = self.query_one("#cluster-filter", Input)
        box.add_class("shown")
        box.focus()

    def action_clear_filter(self) -> None:
        box = self.query_one("#cluster-filter", Input)
        box.value = ""
        box.remove_class("shown")
        self._set_filter("")
        self.query_one("#cluster-hosts", SortedTable).focus()

    def on_input_changed(self, event: Input.Changed) -> None:
        self._set_filter(event.value)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.query_one("#cluster-hosts", SortedTable).focus()

    def _set_filter(self, text: str) -> None:
        for table in self.query(SortedTable):
            table.filter_text = text.strip()
        self._redraw()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        if self.view is None:
            return
        key = str(event.row_key.value)
        if event.data_table.id == "cluster-gpus":
            key = key.split("\x00", 1)[0]
        host = next((h for h in self.view.detail.hosts if h.name == key), None)
        if host is None:
            summary = next((h for h in self.view.hosts if h.name == key), None)
            if summary is None:
                return
            # Its GPUs are not read yet (it just came on screen): shown when they come.
            host = ClusterHost(key, (), state=summary.state, last_seen=summary.last_seen,
                               age_s=summary.age_s, instances=summary.instances,
                               exporters=summary.exporters, simulated=summary.simulated)  # fmt: skip
        screen = HostScreen(host, self.history)
        screen.reachable = not self._behind
        self.app.push_screen(screen)


PROCESS_COLUMNS: tuple[Column, ...] = (
    Column("gpu", "GPU", lambda p: str(p.gpu_index), lambda p: p.gpu_index, True),
    Column("pid", "PID", lambda p: str(p.pid), lambda p: p.pid, True),
    Column("user", "User", lambda p: p.user or rows.NA, lambda p: p.user),
    Column("container", "Container", lambda p: p.container or "", lambda p: p.container),
    Column(
        "gpu_mem",
        "GPU mem",
        lambda p: rows.NA if p.gpu_memory is None else f"{p.gpu_memory / 2**30:.1f} GiB",
        lambda p: p.gpu_memory,
        True,
    ),
    Column(
        "sm",
        "SM %",
        lambda p: rows.NA if p.sm_util is None else f"{p.sm_util}",
        lambda p: p.sm_util,
        True,
    ),
    Column("command", "Command", lambda p: p.command or rows.NA, lambda p: p.command),
)


class HostScreen(_SortingScreen):
    """One host: its GPUs and, where a gputui exporter runs there, its processes."""

    BINDINGS = [
        Binding("escape,backspace", "back", "Back"),
        Binding("s", "cycle_sort", "Sort"),
        Binding("r", "reverse_sort", "Reverse", show=False),
    ]
    MAIN_TABLE = "host-gpus"

    def __init__(self, host: ClusterHost, history: History) -> None:
        super().__init__()
        self.host = host
        self.history = history
        self.reachable = True  # False while Prometheus does not answer: states are unknown

    def set_reachable(self, reachable: bool) -> None:
        if reachable != self.reachable:
            self.reachable = reachable
            self._redraw()

    def compose(self) -> ComposeResult:
        yield Static("", id="host-info")
        yield Static("GPUs", classes="cluster-title")
        yield SortedTable(rows.GPU_COLUMNS, id="host-gpus", min_width=rows.GPU_MIN_WIDTH)
        yield Static("Processes", classes="cluster-title")
        yield SortedTable(PROCESS_COLUMNS, id="host-processes")
        yield Static("", id="host-note")
        yield Footer()

    def on_mount(self) -> None:
        self._redraw()
        self.query_one("#host-gpus", SortedTable).focus()

    def update_cluster(self, cluster: ClusterSnapshot, history: History) -> None:
        host = next((h for h in cluster.hosts if h.name == self.host.name), None)
        if host is not None:
            self.host = host
        self.history = history
        self._redraw()

    def _redraw(self) -> None:
        h = self.host
        exporters = ", ".join(h.exporters) or "?"
        sim = "  SIMULATED GPUs" if h.simulated else ""
        self.query_one("#host-info", Static).update(
            f"{markup_safe(h.name)}  {h.state if self.reachable else rows.UNKNOWN}  "
            f"{len(h.gpus)} GPUs  via {exporters}  "
            f"age {age_text(h.age_s)}{sim}"
        )
        gpus = self.query_one("#host-gpus", SortedTable)
        grows = rows.sorted_rows(
            rows.gpu_rows([h], self.history, reachable=self.reachable),
            gpus.column_spec(),
            gpus.sort_reverse,
        )
        gpus.fill([(r.key, r) for r in grows])
        procs = self.query_one("#host-processes", SortedTable)
        items = rows.sorted_rows(list(h.processes), procs.column_spec(), procs.sort_reverse)
        procs.fill([(f"{p.gpu_index}:{p.pid}", p) for p in items])
        note = ""
        if "gputui" not in h.exporters:
            note = "processes are exported by `gputui exporter`; this host runs dcgm-exporter only"
        elif not h.processes:
            note = "no GPU processes"
        self.query_one("#host-note", Static).update(note)

    def action_back(self) -> None:
        self.app.pop_screen()
