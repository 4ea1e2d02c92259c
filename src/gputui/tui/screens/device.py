"""Enter (or a click) on a GPU: every fact NVML gives about it, and its MIG devices.

The dialog follows the polls like the process dialog (the app hands every
snapshot to the screen on top): modes, link, BAR1 and energy move; a GPU that
fails says so. The rows come from device_facts.py, where N/A is decided.
"""

from __future__ import annotations

from pathlib import Path

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from gputui.model.snapshot import DeviceSnapshot, GpuEvent, GpuProcess, Snapshot
from gputui.tui.views import formatting as fmt
from gputui.tui.views.device_facts import STATIC_ROWS, device_facts, mig_line
from gputui.tui.views.gpu_events import event_line, events_summary

TWO_COLUMNS_FROM = 120  # terminal columns from which the facts sit in two column pairs


def facts_table(dev: DeviceSnapshot, two_columns: bool = True) -> Table:
    """Label/value rows; with `two_columns`, what was read at start on the left, this poll's
    on the right. The first two facts (GPU, UUID) are the dialog's title."""
    rows = device_facts(dev)
    left, right = rows[2:STATIC_ROWS], rows[STATIC_ROWS:]
    table = Table(box=None, show_header=False, padding=(0, 1), expand=two_columns)
    if not two_columns:
        table.add_column(style="bold", no_wrap=True)
        table.add_column()
        for name, value in left + right:
            table.add_row(Text(name), Text(value))  # literal: NVML strings are not markup
        return table
    table.add_column(style="bold", no_wrap=True)
    table.add_column(no_wrap=True)
    table.add_column(style="bold", no_wrap=True)
    table.add_column(ratio=1)
    for i in range(max(len(left), len(right))):
        cells: list[Text] = []
        for half in (left, right):
            name, value = half[i] if i < len(half) else ("", "")
            cells += [Text(name), Text(value)]
        table.add_row(*cells)
    return table


def mig_text(dev: DeviceSnapshot, processes: tuple[GpuProcess, ...]) -> Text:
    """The MIG section: one line per device, its UUID and the PIDs running in it."""
    if not dev.info.mig_mode:
        return Text("MIG: not enabled on this GPU", style="dim")
    if not dev.mig_devices:
        return Text("MIG: enabled, no MIG device listed", style="dim")
    mine = [p for p in processes if p.gpu_index == dev.index]
    text = Text()
    text.append(f"MIG devices ({len(dev.mig_devices)})\n", style="bold")
    for m in dev.mig_devices:
        text.append(mig_line(dev.index, m, mine) + "\n")
        pids = [
            str(p.pid)
            for p in mine
            if m.gpu_instance_id is not None and p.gpu_instance_id == m.gpu_instance_id
        ]
        text.append(f"  └ {m.uuid or fmt.NA} · BAR1 ")
        bar1 = (
            fmt.NA
            if m.bar1_total is None
            else f"{fmt.size(m.bar1_used)} / {fmt.size(m.bar1_total)}"
        )
        text.append(bar1)
        text.append(f" · PIDs {' '.join(pids) if pids else '-'}\n")
    return text


MAX_SHOWN = 12  # the newest events listed in the details


class DeviceScreen(ModalScreen[None]):
    CSS_PATH = Path(__file__).with_name("device_screen.tcss")
    BINDINGS = [Binding("escape,enter,q", "close", "Close")]

    def __init__(self, device: DeviceSnapshot, processes: tuple[GpuProcess, ...] = ()) -> None:
        super().__init__()
        self.device = device
        self.processes = processes

    def _title(self) -> Text:
        info = self.device.info
        text = Text(f"GPU {info.index}: {info.name}", style="bold")
        text.append(f" · {info.uuid or 'UUID N/A'}", style="not bold")
        return text

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="device-dialog"):
            yield Static(self._title(), id="device-title")
            yield Static(facts_table(self.device, self._wide()), id="device-facts")
            yield Static(mig_text(self.device, self.processes), id="device-mig")
            events = Static(self._events_text(), id="device-events")
            events.display = bool(self._events())
            yield events
            yield Static("escape closes this", id="device-hint")

    def update_snapshot(self, snap: Snapshot) -> None:
        """Follow the GPU through the polls (called by the app for the screen on top)."""
        current = next((d for d in snap.devices if d.index == self.device.index), None)
        if snap.events and self.is_mounted:  # events arrive whatever else changed
            self._show_events()
        if current is None:
            return
        if current == self.device and snap.processes == self.processes:
            return
        self.device, self.processes = current, snap.processes
        if not self.is_mounted:
            return
        self.query_one("#device-title", Static).update(self._title())
        self.query_one("#device-facts", Static).update(facts_table(current, self._wide()))
        self.query_one("#device-mig", Static).update(mig_text(current, snap.processes))
        self._show_events()

    def _events(self) -> tuple[GpuEvent, ...]:
        """This GPU's XID and ECC events of the session (the app's alert log keeps them)."""
        log = getattr(self.app, "alert_log", None)
        return log.events_of(self.device.index) if log is not None else ()

    def _show_events(self) -> None:
        """Shown only once there is one: a GPU without events keeps its details as they were."""
        static = self.query_one("#device-events", Static)
        static.display = bool(self._events())
        static.update(self._events_text())

    def _events_text(self) -> Text:
        events = self._events()
        text = Text("XID and ECC events: ", style="bold")
        text.append(events_summary(events), style="not bold")
        for event in reversed(events[-MAX_SHOWN:]):
            text.append(
                f"\n  {event_line(event)}", style="bold red" if event.kind != "ecc_sbe" else ""
            )
        if len(events) > MAX_SHOWN:
            text.append(f"\n  … {len(events) - MAX_SHOWN} older", style="dim")
        return text

    def _wide(self) -> bool:
        return self.app.size.width >= TWO_COLUMNS_FROM

    def on_resize(self) -> None:
        if self.is_mounted:
            self.query_one("#device-facts", Static).update(facts_table(self.device, self._wide()))

    def action_close(self) -> None:
        self.dismiss(None)
