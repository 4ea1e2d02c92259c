"""The host under the GPUs: CPU (total and per core), load, RAM and swap."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import Label, ProgressBar, Static

from gputui.telemetry.snapshot import HostSnapshot
from gputui.tui import formatting as fmt


def cores_line(per_cpu: tuple[float, ...], width: int) -> str:
    """One block per core on a fixed 0-100 scale; beyond `width` cores, busiest-of-group."""
    if not per_cpu or width <= 0:
        return ""
    values = list(per_cpu)
    if len(values) > width:
        step = len(values) / width
        values = [
            max(values[int(i * step) : max(int((i + 1) * step), int(i * step) + 1)])
            for i in range(width)
        ]
    return fmt.spark(values, len(values)).rstrip()


class CoreBars(Static):
    def __init__(self) -> None:
        super().__init__("", id="cpu-cores")
        self.per_cpu: tuple[float, ...] = ()

    def show(self, per_cpu: tuple[float, ...]) -> None:
        self.per_cpu = per_cpu
        self.refresh()

    def render(self) -> Text:
        n = len(self.per_cpu)
        label = f"{n} cores " if n else ""
        bars = cores_line(self.per_cpu, max(0, self.size.width - len(label)))
        return Text(label + bars, no_wrap=True, end="")


class HostPanel(Vertical):
    def __init__(self) -> None:
        super().__init__(id="host")

    def compose(self) -> ComposeResult:
        with Horizontal(classes="host-row"):
            yield Label("CPU", classes="metric-label")
            yield ProgressBar(total=100, show_eta=False, show_percentage=False, id="cpu-bar")
            yield Static("", classes="metric-value", id="cpu-value")
            yield CoreBars()
        with Horizontal(classes="host-row"):
            yield Label("RAM", classes="metric-label")
            yield ProgressBar(total=100, show_eta=False, show_percentage=False, id="ram-bar")
            yield Static("", id="ram-value")

    def update_host(self, host: HostSnapshot | None) -> None:
        h = host or HostSnapshot(hostname="")
        self.query_one("#cpu-bar", ProgressBar).update(progress=h.cpu_percent or 0.0)
        self.query_one("#cpu-value", Static).update(fmt.na(h.cpu_percent, "{:>3.0f} %"))
        self.query_one(CoreBars).show(h.per_cpu_percent)
        ram_pct = fmt.percent_of(h.memory_used, h.memory_total)
        self.query_one("#ram-bar", ProgressBar).update(progress=ram_pct or 0.0)
        load = fmt.NA if h.load_average is None else " ".join(f"{x:.2f}" for x in h.load_average)
        text = Text(
            f"{fmt.gib(h.memory_used)} / {fmt.gib(h.memory_total)} GiB"
            f"  swap {fmt.gib(h.swap_used)} / {fmt.gib(h.swap_total)} GiB"
            f"  load {load}",
            no_wrap=True,
            overflow="ellipsis",
        )
        self.query_one("#ram-value", Static).update(text)
