"""Enter (or a click) on a process: everything known about it, the command unabridged.

The dialog follows the polls (the app hands every snapshot to the screen on
top): CPU, memory and running time move, and a process that leaves the list
says so instead of showing its last values as if it were still there.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from gputui.telemetry.snapshot import GpuProcess, Snapshot
from gputui.tui import formatting as fmt

NOT_VISIBLE = "no: another PID namespace"

InvisibleReason = Callable[[GpuProcess], str]


def process_facts(p: GpuProcess, why_not_visible: str = NOT_VISIBLE) -> list[tuple[str, str]]:
    container = p.container or "-"
    if p.container and p.container_pid is not None:
        container += f" (PID {p.container_pid} inside)"
    return [
        ("PID", str(p.pid)),
        ("GPU", str(p.gpu_index)),
        ("type", p.type),
        ("user", p.user or fmt.NA),
        ("container", container),
        ("GPU memory", fmt.size(p.gpu_memory)),
        ("SM / memory util", f"{fmt.na(p.sm_util, '{}%')} / {fmt.na(p.mem_util, '{}%')}"),
        ("CPU", fmt.na(p.cpu_percent, "{:.1f}%")),
        ("host memory (RSS)", fmt.size(p.rss)),
        ("running", fmt.duration(p.running_s)),
        ("visible to gputui", "yes" if p.host_visible else why_not_visible),
    ]


def facts_table(p: GpuProcess, why_not_visible: str = NOT_VISIBLE) -> Table:
    table = Table(box=None, show_header=False, padding=(0, 2))
    table.add_column(style="bold", no_wrap=True)
    table.add_column()
    for name, value in process_facts(p, why_not_visible):
        table.add_row(name, Text(value))  # literal: a str cell would be parsed as markup
    return table


class ProcessScreen(ModalScreen[None]):
    CSS_PATH = Path(__file__).with_name("process.tcss")
    BINDINGS = [Binding("escape,enter,q", "close", "Close")]

    def __init__(self, proc: GpuProcess, why_not_visible: InvisibleReason | None = None) -> None:
        super().__init__()
        self.proc = proc
        self.gone = False  # no longer in the latest poll
        self._why = why_not_visible

    def _reason(self) -> str:
        if self.proc.host_visible or self._why is None:
            return NOT_VISIBLE
        return self._why(self.proc)

    def _title(self) -> Text:
        if self.gone:
            return Text(f"Process {self.proc.pid}: no longer listed (it has exited)", style="bold")
        return Text(f"Process {self.proc.pid}")

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="process-dialog"):
            yield Static(self._title(), id="process-title")
            yield Static(facts_table(self.proc, self._reason()), id="process-facts")
            yield Static("command", id="process-command-label")
            # Literal text, wrapped: the full command line is the point of this screen.
            yield Static(self.proc.command or fmt.NA, id="process-command", markup=False)
            yield Static("escape closes this", id="process-hint")

    def update_snapshot(self, snap: Snapshot) -> None:
        """Follow the process through the polls (called by the app for the screen on top)."""
        current = next(
            (
                p
                for p in snap.processes
                if p.pid == self.proc.pid and p.gpu_index == self.proc.gpu_index
            ),
            None,
        )
        gone = current is None
        if current is not None and current == self.proc and not self.gone:
            return
        self.gone = gone
        if current is not None:
            self.proc = current
        if not self.is_mounted:
            return
        self.query_one("#process-title", Static).update(self._title())
        self.query_one("#process-facts", Static).update(facts_table(self.proc, self._reason()))
        self.query_one("#process-command", Static).update(self.proc.command or fmt.NA)

    def action_close(self) -> None:
        self.dismiss(None)
