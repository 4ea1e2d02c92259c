"""Graphs with a time axis beside the GPU panels, on a terminal wide enough for them.

nvitop and nvtop draw history on their main screen; the panels' one-line sparklines
leave most of a wide terminal blank. From WIDE_MIN columns the dashboard gives the
right-hand part of the GPU area to this widget: beside each GPU's panel, as many
rows as the panel is tall, its utilisation (and memory where there are 4 rows or
more) as bar charts on a fixed 0-100 % scale, one column per second, the newest at
the right edge; under them (on the last panel's last row) one time axis (`-30s│`, `-1m│` ... `now`). The charts are
history_chart's (each column the maximum of its seconds); the time marks time_axis's.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from rich.text import Text
from textual.widget import Widget

from gputui.tui.views.time_axis import axis_line
from gputui.tui.widgets.history_chart import chart_rows

WIDE_MIN = 180  # columns from which the graphs are shown (the panels keep 108)
LABEL = 9  # "0 UTIL % " left of each chart

WindowFn = Callable[[int, str, float], Sequence[float]]  # (GPU, metric, seconds) -> values


class GpuGraphs(Widget):
    """One block of chart rows per GPU, its height the height of that GPU's panel."""

    DEFAULT_CSS = """
    GpuGraphs { text-wrap: nowrap; }
    GpuGraphs > .gpu-graphs--label { text-style: bold; }
    GpuGraphs > .gpu-graphs--bars { color: $primary; }
    GpuGraphs > .gpu-graphs--axis { color: $text-muted; }
    """
    COMPONENT_CLASSES = {"gpu-graphs--label", "gpu-graphs--bars", "gpu-graphs--axis"}

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._blocks: list[tuple[int, int]] = []  # (GPU index, rows) in panel order
        self._window: WindowFn | None = None
        self._span_s: Callable[[int], float] | None = None
        self._drawn: tuple[object, Text] | None = None

    def set_data(
        self, blocks: list[tuple[int, int]], window: WindowFn, span_s: Callable[[int], float]
    ) -> None:
        """New data each poll: the GPUs with their panels' heights, and their histories."""
        layout = blocks != self._blocks
        self._blocks, self._window, self._span_s = blocks, window, span_s
        drawn = self._drawn
        if layout or drawn is None or not self.is_mounted:
            self._drawn = None
            self.refresh(layout=layout)
            return
        # A poll that moved nothing drawn here (a frozen clock, an idle box): no repaint.
        key = (self.content_size.width, self.app.theme)
        text = self._draw()
        if drawn[0] != key or text != drawn[1]:
            self._drawn = (key, text)
            self.refresh()

    def get_content_height(self, container: object, viewport: object, width: int) -> int:
        return sum(rows for _, rows in self._blocks)

    def _columns(self) -> int:
        return max(0, self.content_size.width - LABEL)

    def seconds_shown(self) -> float:
        """One column per second: the span the charts stand for, at most what is kept."""
        columns = self._columns()
        if self._span_s is None or not self._blocks or columns < 2:
            return 0.0
        kept = max(self._span_s(index) for index, _ in self._blocks)
        return float(min(columns, max(0.0, kept)))

    def render(self) -> Text:
        key = (self.content_size.width, self.app.theme)
        if self._drawn is not None and self._drawn[0] == key:
            return self._drawn[1]
        text = self._draw()
        self._drawn = (key, text)
        return text

    def _draw(self) -> Text:
        out = Text(no_wrap=True, overflow="crop", end="")
        columns, window = self._columns(), self._window
        if window is None or columns < 2 or not self._blocks:
            return out
        label_style = self.get_component_rich_style("gpu-graphs--label")
        bars_style = self.get_component_rich_style("gpu-graphs--bars")
        span = self.seconds_shown()
        # As tall as the panels: the time axis takes the last block's last row.
        blocks = list(self._blocks)
        blocks[-1] = (blocks[-1][0], max(1, blocks[-1][1] - 1))
        for n, (index, rows) in enumerate(blocks):
            charts = [("UTIL", rows)]
            if rows >= 4:
                charts = [("UTIL", rows - rows // 2), ("MEM", rows // 2)]
            for c, (name, height) in enumerate(charts):
                metric = "utilization" if name == "UTIL" else "memory"
                values = window(index, metric, span) if span > 0 else []
                lines = chart_rows(values, columns, height, 100.0)
                for r, line in enumerate(lines):
                    if n or c or r:
                        out.append("\n")
                    head = f"{index} {name} %" if r == 0 else ""
                    out.append(f"{head:<{LABEL}}", label_style)
                    out.append(line, bars_style)
        out.append("\n" + " " * LABEL)
        out.append(
            axis_line(columns, columns, span), self.get_component_rich_style("gpu-graphs--axis")
        )
        return out
