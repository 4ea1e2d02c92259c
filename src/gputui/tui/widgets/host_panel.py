"""The host under the GPUs: CPU (total and per core), load, RAM and swap, in two lines.

Drawn by one widget for the same reason as GpuPanel: nested containers made
the compositor re-render far more than what changed.
"""

from __future__ import annotations

from rich.text import Text

from gputui.model.snapshot import HostSnapshot
from gputui.tui.views import formatting as fmt
from gputui.tui.widgets.gpu_panel import bar
from gputui.tui.widgets.text_lines import TextLines

BAR_WIDTH = 30


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


class HostPanel(TextLines):
    COMPONENT_CLASSES = {
        "host-panel--label",
        "host-panel--bar",
        "host-panel--bar-back",
        "host-panel--cores",
    }

    def __init__(self) -> None:
        super().__init__(id="host")
        self.host: HostSnapshot | None = None

    def update_host(self, host: HostSnapshot | None) -> None:
        if host != self.host:
            self.host = host
            self.refresh()

    def cpu_text(self) -> str:
        h = self.host
        return fmt.na(None if h is None else h.cpu_percent, "{:>3.0f} %")

    def ram_text(self) -> str:
        h = self.host or HostSnapshot(hostname="")
        load = fmt.NA if h.load_average is None else " ".join(f"{x:.2f}" for x in h.load_average)
        return (
            f"{fmt.gib(h.memory_used)} / {fmt.gib(h.memory_total)} GiB"
            f"  swap {fmt.gib(h.swap_used)} / {fmt.gib(h.swap_total)} GiB  load {load}"
        )

    def render(self) -> Text:
        h = self.host or HostSnapshot(hostname="")
        style = self.component_style
        width = self.content_size.width
        bar_w = max(0, min(BAR_WIDTH, (width - 14) // 3))
        fill, back = style("host-panel--bar"), style("host-panel--bar-back")
        out = Text(no_wrap=True, overflow="ellipsis", end="")
        out.append("CPU ", style("host-panel--label"))
        out.append_text(bar(h.cpu_percent, bar_w, fill, back))
        n = len(h.per_cpu_percent)
        cores_label = f" {self.cpu_text()}  {n} cores " if n else f" {self.cpu_text()}"
        out.append(cores_label)
        used = 4 + bar_w + len(cores_label)
        out.append(cores_line(h.per_cpu_percent, max(0, width - used)), style("host-panel--cores"))
        out.append("\n")
        out.append("RAM ", style("host-panel--label"))
        out.append_text(bar(fmt.percent_of(h.memory_used, h.memory_total), bar_w, fill, back))
        out.append(" " + self.ram_text())
        return out
