"""Enter (or a click) on a process: everything known about it, the command unabridged."""

from __future__ import annotations

from pathlib import Path

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from gputui.telemetry.snapshot import GpuProcess
from gputui.tui import formatting as fmt


def process_facts(p: GpuProcess) -> list[tuple[str, str]]:
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
        ("visible to gputui", "yes" if p.host_visible else "no: another PID namespace"),
    ]


class ProcessScreen(ModalScreen[None]):
    CSS_PATH = Path(__file__).with_name("process.tcss")
    BINDINGS = [Binding("escape,enter,q", "close", "Close")]

    def __init__(self, proc: GpuProcess) -> None:
        super().__init__()
        self.proc = proc

    def compose(self) -> ComposeResult:
        table = Table(box=None, show_header=False, padding=(0, 2))
        table.add_column(style="bold", no_wrap=True)
        table.add_column()
        for name, value in process_facts(self.proc):
            table.add_row(name, Text(value))  # literal: a str cell would be parsed as markup
        with VerticalScroll(id="process-dialog"):
            yield Static(f"Process {self.proc.pid}", id="process-title")
            yield Static(table)
            yield Static("command", id="process-command-label")
            # Literal text, wrapped: the full command line is the point of this screen.
            yield Static(self.proc.command or fmt.NA, id="process-command", markup=False)
            yield Static("escape closes this", id="process-hint")

    def action_close(self) -> None:
        self.dismiss(None)
