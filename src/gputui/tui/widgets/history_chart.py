"""Every history of one GPU as fixed-scale bar charts, drawn by one widget.

Why not Textual's Sparkline: it scales between the min and max of its data,
so a GPU held at 97 % or a temperature moving 70-72 °C fills the chart
top to bottom and reads as "wild"; here each metric has a fixed scale
(0-100 % for utilisation and memory, 0 to the power limit, 0 to at least
100 °C, 0 to the busiest PCIe point), printed next to the chart. Why not a
plotting widget (textual-plotext): two more dependencies and a full canvas
redraw per poll for what is a row of block characters; the dashboard's cost
budget is one core-percent. Why one widget: the dashboard's GPU panel showed
that nested containers make the compositor re-render far more than what
changed (see gpu_panel.py).

The data is bucketed into the chart's width by the bucket's maximum, so a
one-second spike in a 15-minute window still shows.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from rich.text import Text
from textual.widget import Widget

from gputui.tui.views import formatting as fmt
from gputui.tui.views.time_axis import axis_line

_EIGHTHS = " ▁▂▃▄▅▆▇█"
LABEL_WIDTH = 12


def buckets(values: Sequence[float], width: int) -> list[float]:
    """`width` columns, each the maximum of its share of `values` (oldest first); fewer
    values than columns are spread over the width (a minute of points fills the chart,
    as the time axis under it counts), each value over the columns of its time."""
    if width <= 0 or not values:
        return []
    if len(values) <= width:
        return [values[i * len(values) // width] for i in range(width)]
    step = len(values) / width
    return [
        max(values[int(i * step) : max(int((i + 1) * step), int(i * step) + 1)])
        for i in range(width)
    ]


def chart_rows(values: Sequence[float], width: int, height: int, hi: float) -> list[str]:
    """`height` lines of block characters, top line first, newest value at the right edge."""
    cols = buckets(values, width)
    span = hi if hi > 0 else 1.0
    levels = [round(min(1.0, max(0.0, v / span)) * height * 8) for v in cols]
    rows = []
    for r in reversed(range(height)):
        line = []
        for level in levels:
            part = level - r * 8
            line.append(_EIGHTHS[max(0, min(8, part))])
        rows.append(" " * (width - len(cols)) + "".join(line))
    return rows


@dataclass(frozen=True, slots=True)
class Metric:
    """One chart: which history, how its values read, and the top of its scale."""

    key: str
    label: str
    unit: Callable[[float], str]
    scale: Callable[[Sequence[float]], float]


def _pct(v: float) -> str:
    return f"{v:.0f} %"


def _watts(v: float) -> str:
    return f"{v:.0f} W"


def _celsius(v: float) -> str:
    return f"{v:.0f} °C"


def _kbs(v: float) -> str:
    return fmt.throughput_kbs(int(v))


# GPM's SMs active, charted under utilization only for a GPU that has GPM.
SM_ACTIVE = Metric("sm_active", "SMs active", _pct, lambda v: 100.0)


def metrics(power_limit_w: float | None, gpm: bool = False) -> tuple[Metric, ...]:
    def power_top(values: Sequence[float]) -> float:
        return max(power_limit_w or 0.0, max(values, default=0.0))

    return (
        Metric("utilization", "GPU util", _pct, lambda v: 100.0),
        *((SM_ACTIVE,) if gpm else ()),
        Metric("memory", "Memory", _pct, lambda v: 100.0),
        Metric("power", "Power", _watts, power_top),
        Metric("temperature", "Temp", _celsius, lambda v: max(100.0, max(v, default=0.0))),
        Metric("pcie_rx", "PCIe rx", _kbs, lambda v: max(v, default=0.0) or 1.0),
        Metric("pcie_tx", "PCIe tx", _kbs, lambda v: max(v, default=0.0) or 1.0),
    )


SeriesFn = Callable[[str], Sequence[float]]


class HistoryChart(Widget):
    """A summary line and `chart_height` rows per metric for the series `set_data` gives."""

    DEFAULT_CSS = """
    HistoryChart { height: auto; padding: 0 1; text-wrap: nowrap; text-overflow: ellipsis; }
    HistoryChart > .history-chart--label { text-style: bold; }
    HistoryChart > .history-chart--bars { color: $primary; }
    HistoryChart > .history-chart--dim { color: $text-muted; }
    """
    COMPONENT_CLASSES = {"history-chart--label", "history-chart--bars", "history-chart--dim"}

    def __init__(self, chart_height: int = 2, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.chart_height = chart_height
        self._data: dict[str, Sequence[float]] = {}
        self._metrics: tuple[Metric, ...] = metrics(None)
        self._limit: float | None = None
        self._span_s = 0.0

    def set_data(self, power_limit_w: float | None, series: SeriesFn, span_s: float = 0.0) -> None:
        """New series for every metric; repaints only when one of them changed. `span_s`:
        the seconds the series cover (the time axis under the charts)."""
        new_metrics = metrics(power_limit_w, gpm=bool(series(SM_ACTIVE.key)))
        data = {m.key: series(m.key) for m in new_metrics}
        if data != self._data or power_limit_w != self._limit or span_s != self._span_s:
            self._limit = power_limit_w
            self._span_s = span_s
            self._data = data
            grew = len(new_metrics) != len(self._metrics)  # GPM's chart came or went
            self._metrics = new_metrics
            self.refresh(layout=grew)  # same height otherwise: no layout pass

    def get_content_height(self, container: object, viewport: object, width: int) -> int:
        return len(self._metrics) * (1 + self.chart_height) + 1  # and the time axis

    def render(self) -> Text:
        width = max(1, self.content_size.width)
        style = self.get_component_rich_style
        out = Text(no_wrap=True, overflow="ellipsis", end="")
        for n, m in enumerate(self._metrics):
            values = self._data.get(m.key, ())
            if n:
                out.append("\n")
            out.append(f"{m.label:<{LABEL_WIDTH}}", style("history-chart--label"))
            if not values:
                out.append("N/A (no readings in this window)", style("history-chart--dim"))
            else:
                top = m.scale(values)
                out.append(
                    f"now {m.unit(values[-1])}   min {m.unit(min(values))}"
                    f"   max {m.unit(max(values))}"
                )
                out.append(f"   scale 0-{m.unit(top)}", style("history-chart--dim"))
            rows = chart_rows(values, width, self.chart_height, m.scale(values) if values else 1)
            for row in rows:
                out.append("\n")
                out.append(row, style("history-chart--bars"))
        out.append("\n")
        out.append(self.axis(width), style("history-chart--dim"))
        return out

    def axis(self, width: int) -> str:
        """The time axis: the whole width stands for `span_s` (the charts are spread over it)."""
        longest = max((len(v) for v in self._data.values()), default=0)
        return axis_line(width, width if longest else 0, self._span_s)

    def fit_height(self, lines: int) -> None:
        """Charts as tall as `lines` (the room the screen gives) allows, at least 2 rows."""
        per_metric = max(2, (lines - 1) // max(1, len(self._metrics)) - 1)
        if per_metric != self.chart_height:
            self.chart_height = per_metric
            self.refresh(layout=True)
