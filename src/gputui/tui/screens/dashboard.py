"""The main screen: header, banner, GPU panels, host, process table, details, footer.

`update_snapshot` only pushes new values into existing widgets; the screen is
composed once and GPU panels are mounted once, when the device count is known:
with the screen itself when the first poll has ended by then (first_poll.py), so
that the first frame is painted once, with them and their layout classes already
set (a class set on a mounted widget restyles all of its subtree).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path, PurePath

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Input, Label

from gputui.history.metrics import History
from gputui.model.snapshot import DeviceSnapshot, GpuProcess, Snapshot
from gputui.tui.first_poll import COMPOSE_WAIT_S, FirstPoll
from gputui.tui.messages import DashboardReady
from gputui.tui.views import formatting as fmt
from gputui.tui.views.device_facts import instance_label
from gputui.tui.widgets.field import Field
from gputui.tui.widgets.fit_line import FitLine
from gputui.tui.widgets.gpu_graphs import WIDE_MIN, GpuGraphs
from gputui.tui.widgets.gpu_panel import GpuPanel
from gputui.tui.widgets.host_panel import HostPanel
from gputui.tui.widgets.info_bar import Banner, HeaderFacts, InfoBar, banner_text, header_text
from gputui.tui.widgets.process_table import ProcessTable

_WIDGETS = Path(__file__).parent.parent / "widgets"

COMPACT_MIN_GPUS = 4
COMPACT_BELOW_ROWS = 30

ROWS_ABOVE_SHARE = 0.5  # compact panels taller than this share of the screen: one line each

SeriesFn = Callable[[int, str], Sequence[float | None]]


def one_line_rows(mig_counts: Iterable[int], height: int) -> bool:
    """True when two-line panels (and their MIG lines) would take over half the screen:
    then each GPU gets one line, so the process table keeps rows (8 GPUs at 80x24)."""
    lines = sum(2 + n for n in mig_counts)
    return height > 0 and lines > height * ROWS_ABOVE_SHARE


def process_list_note(snap: Snapshot) -> str | None:
    """GPUs whose process list NVML cannot give: their empty table means "unknown", not "idle"."""
    gpus = [str(d.index) for d in snap.devices if d.processes_unsupported]
    if not gpus:
        return None
    which = "GPU " + ", ".join(gpus)
    return f"{which}: the process list is not available on this GPU (NVML: not supported)"


def process_details(
    p: GpuProcess | None, why_not_visible: str | None = None, instance: str | None = None
) -> Text:
    if p is None:
        return Text("no process selected", style="dim")
    text = Text(no_wrap=True, overflow="ellipsis")
    text.append(f"PID {p.pid}", style="bold")
    if p.container:
        inner = f", PID {p.container_pid} inside" if p.container_pid is not None else ""
        text.append(f" (container {p.container}{inner})")
    text.append(
        f"   user {p.user or fmt.NA}  {p.type} on GPU {p.gpu_index}"
        + (f" (MIG {instance})" if instance else "")
        + f"  GPU mem {fmt.size(p.gpu_memory)}  SM {fmt.na(p.sm_util, '{}%')}"
        f"  mem {fmt.na(p.mem_util, '{}%')}"
    )
    if not p.host_visible:
        text.append("\n")
        # The host fields it explains are all N/A: the reason takes their place, at the
        # start of the second line (after the first line's facts it was cut at 120 columns).
        why = why_not_visible or "no: another PID namespace"
        text.append(f"host details: {why}", style="bold")
        text.append(f"  ·  {p.command or fmt.NA}")
        return text
    text.append(
        f"  CPU {fmt.na(p.cpu_percent, '{:.0f}%')}  RSS {fmt.size(p.rss)}"
        f"  up {fmt.duration(p.running_s)}"
    )
    text.append("\n")
    text.append(p.command or fmt.NA)
    return text


# Loaded by the App: Textual does not read CSS_PATH of the default screen.
CSS_PATHS: list[str | PurePath] = [
    Path(__file__).with_name("dashboard.tcss"),
    _WIDGETS / "gpu_panel.tcss",
    _WIDGETS / "host_panel.tcss",
    _WIDGETS / "process_table.tcss",
]


class DashboardScreen(Screen[None]):
    # The process table has the focus from the start (the first GPU panel would get it
    # otherwise, now that the panels are composed with the screen: a focus change and a
    # restyle more before the first frame).
    AUTO_FOCUS = "#procs"

    # Screen's own tab binding is hidden; this one puts it in the footer. The actions
    # live on the App (they touch polling and dialogs); the keys only work here.
    BINDINGS = [
        Binding("p", "app.toggle_pause", "Pause"),
        Binding("plus,equals_sign", "app.faster", "Faster", key_display="+"),
        Binding("minus", "app.slower", "Slower", key_display="-"),
        Binding("s", "app.cycle_sort", "Sort"),
        Binding("r", "app.reverse_sort", "Reverse", show=False),
        Binding("slash", "app.filter", "Filter", key_display="/"),
        Binding("k", "app.kill", "Kill"),
        Binding("c", "app.catalog", "Catalog", show=False),
        Binding("f", "app.fit", "Fit", show=False),
        Binding("h", "app.history", "History", show=False),
        Binding("a", "app.alerts", "Alerts", show=False),
        Binding("w", "app.watch_process", "Watch", show=False),
        Binding("e", "toggle_fit_lines", "Fit per GPU", show=False),
        Binding("m", "toggle_mine", "Mine", show=False),
        Binding("tab", "app.focus_next", "Panel"),
    ]

    def __init__(
        self, initial_source: str, fallback_reason: str | None, first_poll: FirstPoll | None = None
    ) -> None:
        super().__init__(id="dashboard")
        self._first_poll = first_poll
        self._source_name = initial_source
        self._fallback_reason = fallback_reason
        self._panels: dict[int, GpuPanel] = {}
        self._mig_counts: list[int] = []
        self._devices: Sequence[DeviceSnapshot] = ()
        self.card_labels: dict[int, str] = {}

    def compose(self) -> ComposeResult:
        yield InfoBar(Text(" gputui  starting…"), id="info")
        banner = banner_text(self._source_name, self._fallback_reason)
        yield Banner(banner or "", id="banner", classes="" if banner else "hidden")
        # Not focusable itself: tab goes to the first GPU panel (each panel takes focus).
        yield self._gpus_container()
        yield HostPanel()
        yield FitLine(held=True)  # its first pass waits for the first frame (app.py)
        with Horizontal(id="filter-row"):
            yield Label("Filter:", id="filter-label")
            yield Input(
                placeholder="PID, user, command, container, type (enter: keep, escape: clear)",
                id="filter",
            )
        yield Field("", id="proc-note", classes="hidden")
        yield ProcessTable(id="procs")
        yield Field(process_details(None), id="details")
        yield Field("", id="status", classes="hidden")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.app.post_message(DashboardReady())

    def on_screen_resume(self) -> None:
        # Snapshots that arrived while another full screen covered us were not drawn.
        resumed = getattr(self.app, "dashboard_resumed", None)
        if callable(resumed):
            resumed()

    # -- updates from the app ---------------------------------------------------------------

    def show_header(self, facts: HeaderFacts) -> None:
        self.query_one("#info", InfoBar).show(header_text(facts))

    def show_banner(self, source: str, reason: str | None) -> None:
        text = banner_text(source, reason)
        banner = self.query_one("#banner", Banner)
        banner.set_class(text is None, "hidden")
        if text is not None:
            banner.show(text, layout=True)

    def show_status(self, text: str | None) -> None:
        status = self.query_one("#status", Field)
        status.set_class(text is None, "hidden")
        status.show(text or "")

    def _gpus_container(self) -> VerticalScroll:
        """The GPU panels' box, with the panels when the first poll has ended by now."""
        first = self._first_poll
        snap = first.result if first is not None and first.wait(COMPOSE_WAIT_S) else None
        # The graphs beside the panels (docked right; shown on a wide terminal only).
        graphs = GpuGraphs(id="graphs")
        wide = "wide" if self.app.size.width >= WIDE_MIN else ""
        if snap is None:
            return VerticalScroll(graphs, id="gpus", can_focus=False, classes=wide)
        panels, compact = self._new_panels(snap, self.app.size.height)
        classes = " ".join(c for c in ("compact" if compact else "", wide) if c)
        return VerticalScroll(graphs, *panels, id="gpus", can_focus=False, classes=classes)

    def _new_panels(self, snap: Snapshot, height: int) -> tuple[list[GpuPanel], bool]:
        """One panel per device, its layout classes set before it is mounted; compact?"""
        self._panels = {d.index: GpuPanel(d.index) for d in snap.devices}
        self._mig_counts = [len(d.mig_devices) for d in snap.devices]
        compact, row = self._layout(height)
        for index, panel in self._panels.items():
            panel.card_label = self.card_labels.get(index)
            panel.set_class(compact, "compact", update=False)
            panel.set_class(row, "row", update=False)
        return list(self._panels.values()), compact

    async def ensure_panels(self, snap: Snapshot) -> None:
        """Mount one panel per device, once (again only if the device list changes)."""
        indices = [d.index for d in snap.devices]
        if list(self._panels) == indices:
            return
        container = self.query_one("#gpus", VerticalScroll)
        await container.remove_children(GpuPanel)
        panels, compact = self._new_panels(snap, self.size.height)
        container.set_class(compact, "compact")  # only the (now empty) box restyles
        await container.mount_all(panels)
        self._apply_compact()

    def update_snapshot(
        self,
        snap: Snapshot,
        series: SeriesFn | None = None,
        history: History | None = None,
        events: Mapping[int, str] | None = None,
    ) -> None:
        """`history`: the graphs' data on a wide terminal (without it, no graphs);
        `events`: each GPU's XIDs of the session as a warning (None: as they were)."""
        self._devices = snap.devices
        for dev in snap.devices:
            panel = self._panels.get(dev.index)
            if panel is None:
                continue
            util = series(dev.index, "utilization") if series else ()
            mem = series(dev.index, "memory") if series else ()
            note = None if events is None else events.get(dev.index, "")
            panel.update_device(dev, util, mem, note)
        if history is not None and self.query_one("#gpus").has_class("wide"):
            self._update_graphs(history)
        self.query_one(HostPanel).update_host(snap.host)
        self.query_one(FitLine).update_snapshot(snap)
        note = process_list_note(snap)
        field = self.query_one("#proc-note", Field)
        if field.has_class("hidden") != (note is None):
            field.set_class(note is None, "hidden")
        field.show(note or "")
        table = self.query_one(ProcessTable)
        table.set_processes(snap.processes)
        self._show_details(table.selected)

    def _update_graphs(self, history: History) -> None:
        """Each GPU's block as tall as its panel."""
        blocks = [(index, panel.rows()) for index, panel in self._panels.items() if panel.rows()]
        self.query_one("#graphs", GpuGraphs).set_data(blocks, history.window, history.span_s)

    def set_card_labels(self, labels: dict[int, str]) -> None:
        self.card_labels = dict(labels)
        for index, panel in self._panels.items():
            panel.card_label = labels.get(index)

    def _layout(self, height: int) -> tuple[bool, bool]:
        """(compact: two lines per GPU, no border; row: one line per GPU) at this height."""
        compact = len(self._panels) >= COMPACT_MIN_GPUS or height < COMPACT_BELOW_ROWS
        return compact, compact and one_line_rows(self._mig_counts, height)

    def _apply_compact(self) -> None:
        compact, row = self._layout(self.size.height)
        self.query_one("#gpus", VerticalScroll).set_class(compact, "compact")
        for panel in self._panels.values():
            panel.set_compact(compact, row)

    def on_resize(self) -> None:
        self._apply_compact()
        wide = self.size.width >= WIDE_MIN
        gpus = self.query_one("#gpus")
        if gpus.has_class("wide") != wide:
            gpus.set_class(wide, "wide")
            history = getattr(self.app, "history", None)
            if wide and isinstance(history, History):
                self._update_graphs(history)

    # -- process table interaction ------------------------------------------------------------

    def _show_details(self, proc: GpuProcess | None) -> None:
        why: str | None = None
        if proc is not None and not proc.host_visible:
            explain = getattr(self.app, "why_not_visible", None)
            why = explain(proc) if callable(explain) else None
        instance = instance_label(proc, self._devices) if proc is not None else None
        self.query_one("#details", Field).show(process_details(proc, why, instance))

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._show_details(self.query_one(ProcessTable).selected)

    def show_filter_text(self, text: str) -> None:
        """A filter set from outside (the settings): the box shows it, as after enter."""
        box = self.query_one("#filter", Input)
        box.value = text
        self._show_filter_row(bool(text))

    def _show_filter_row(self, shown: bool) -> None:
        self.query_one("#filter-row").set_class(shown, "shown")

    def _filters_changed(self) -> None:
        changed = getattr(self.app, "filters_changed", None)
        if callable(changed):
            changed()

    def open_filter(self) -> None:
        self._show_filter_row(True)
        self.query_one("#filter", Input).focus()

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id == "filter":
            self.query_one(ProcessTable).set_filter(event.value)
            self._filters_changed()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id == "filter":
            if not event.value:
                self._show_filter_row(False)
            self.query_one(ProcessTable).focus()

    def action_toggle_mine(self) -> None:
        """Only my processes (by the real uid's name, as the process list reads users)."""
        from gputui.tui.views.kill import user_name

        table = self.query_one(ProcessTable)
        if table.only_user is not None:
            table.set_only_user(None)
            self._filters_changed()
            self.notify("all users' processes", timeout=3)
            return
        me = user_name(os.getuid())
        table.set_only_user(me)
        self._filters_changed()
        self.notify(f"only {me}'s processes (m again: everyone's)", timeout=4, markup=False)

    def action_toggle_fit_lines(self) -> None:
        self.query_one(FitLine).toggle()

    def key_escape(self) -> None:
        box = self.query_one("#filter", Input)
        if box.has_focus or self.query_one("#filter-row").has_class("shown"):
            box.value = ""
            self._show_filter_row(False)
            self.query_one(ProcessTable).set_filter("")
            self._filters_changed()
            self.query_one(ProcessTable).focus()
