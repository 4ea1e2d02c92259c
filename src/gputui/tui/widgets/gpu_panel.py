"""One GPU: utilization and memory bars with history, and the rest in one or two lines.

The same widgets serve both layouts; the `compact` class (4+ GPUs or a short
terminal) only changes CSS, so switching costs a relayout, not a recompose.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import Label, ProgressBar, Static

from gputui.telemetry.snapshot import DeviceSnapshot
from gputui.tui import formatting as fmt

HOT_PERCENT = 90.0


class Spark(Static):
    """Fixed-scale history line, drawn at whatever width layout gave it."""

    def __init__(self, classes: str) -> None:
        super().__init__("", classes=classes)
        self.values: Sequence[float | None] = ()
        self.hi = 100.0

    def show(self, values: Sequence[float | None], hi: float) -> None:
        self.values, self.hi = values, hi
        self.refresh()

    def render(self) -> Text:
        return Text(fmt.spark(self.values, self.size.width, 0.0, self.hi), no_wrap=True, end="")


class Metric(Horizontal):
    """Label, bar, value and a fixed-scale sparkline of the recent past."""

    def __init__(self, label: str, *, classes: str) -> None:
        super().__init__(classes=f"metric {classes}")
        self._label = label
        self._bar = ProgressBar(total=100, show_eta=False, show_percentage=False)
        self._value = Static("", classes="metric-value")
        self._spark = Spark(classes="metric-spark")

    def compose(self) -> ComposeResult:
        yield Label(self._label, classes="metric-label")
        yield self._bar
        yield self._value
        yield self._spark

    def set_value(
        self, percent: float | None, text: str, history: Sequence[float | None], hi: float = 100.0
    ) -> None:
        self._bar.update(progress=percent or 0.0)
        self._value.update(text)
        self.set_class(percent is not None and percent >= HOT_PERCENT, "hot")
        self._spark.show(history, hi)


def stats_line(dev: DeviceSnapshot, compact: bool) -> Text:
    """Everything but utilization and memory; `N/A` wherever the device did not say."""
    s = dev.sample
    if dev.failed is not None or s is None:
        return Text(f"FAILED: {dev.failed or 'no data'}", style="bold")
    sep = " " if compact else "  "
    power = f"{fmt.na(s.power_w, '{:.0f}')}/{fmt.na(s.power_limit_w or dev.info.power_limit_w, '{:.0f}')} W"
    parts = [
        f"{fmt.na(s.temperature_c)}°C",
        f"fan {fmt.na(s.fan_pct, '{}%')}",
        power,
        f"SM {fmt.na(s.sm_clock_mhz, '{} MHz')}",
        f"MEM {fmt.na(s.mem_clock_mhz, '{} MHz')}",
        fmt.pstate(s.performance_state),
        f"PCIe rx {fmt.throughput_kbs(s.pcie_rx_kbs)} tx {fmt.throughput_kbs(s.pcie_tx_kbs)}",
    ]
    warnings = []
    if s.throttle_reasons:
        warnings.append("throttle: " + ", ".join(s.throttle_reasons))
    if s.ecc_volatile_uncorrected:
        warnings.append(f"ECC errors: {s.ecc_volatile_uncorrected}")
    if compact:
        # One line that never wraps; warnings first so a narrow terminal still shows them.
        text = Text(no_wrap=True, overflow="ellipsis", end="")
        if warnings:
            text.append(sep.join(warnings), style="bold")
            text.append(sep)
        text.append(sep.join(parts))
        return text
    text = Text(sep.join(parts))
    if warnings:
        text.append("\n")
        text.append(sep.join(warnings), style="bold")
    return text


def title(dev: DeviceSnapshot, card_label: str | None) -> str:
    parts = [f"GPU {dev.index}", dev.info.name]
    if card_label:
        parts.append(card_label)
    elif dev.info.architecture:
        parts.append(dev.info.architecture.capitalize())
    return " · ".join(parts)


class GpuPanel(Vertical):
    def __init__(self, index: int) -> None:
        super().__init__(classes="gpu-panel", id=f"gpu-{index}")
        self.index = index
        self.card_label: str | None = None
        self._gpu_name = Static("", classes="gpu-name")
        self._util = Metric("UTIL", classes="util")
        self._mem = Metric("MEM", classes="mem")
        self._stats = Static("", classes="gpu-stats")
        self._last: tuple[DeviceSnapshot, Sequence[float | None], Sequence[float | None]] | None = (
            None
        )

    def compose(self) -> ComposeResult:
        with Horizontal(classes="metrics"):
            yield self._gpu_name
            yield self._util
            yield self._mem
        yield self._stats

    def update_device(
        self,
        dev: DeviceSnapshot,
        util_history: Sequence[float | None],
        mem_history: Sequence[float | None],
    ) -> None:
        self._last = (dev, util_history, mem_history)
        compact = self.has_class("compact")
        failed = dev.failed is not None or dev.sample is None
        self.set_class(failed, "failed")
        label = title(dev, self.card_label)
        self.border_title = label
        name = self._gpu_name
        name.update(
            Text(f"{dev.index} {short_name(dev.info.name)}", no_wrap=True, overflow="ellipsis")
        )
        name.tooltip = label
        s = dev.sample
        util = None if s is None or failed else s.utilization_gpu
        self._util.set_value(
            None if util is None else float(util), fmt.na(util, "{:>3} %"), util_history
        )
        total = None if s is None else (s.memory_total or dev.info.memory_total)
        used = None if s is None or failed else s.memory_used
        pct = fmt.percent_of(used, total)
        if compact:
            mem_text = f"{fmt.gib(used)}/{fmt.gib(total, 0)}G"
        else:
            mem_text = f"{fmt.gib(used)} / {fmt.gib(total)} GiB {fmt.na(None if pct is None else round(pct), '{:>3}%')}"
        self._mem.set_value(pct, mem_text, mem_history)
        self._stats.update(stats_line(dev, compact))

    def set_compact(self, compact: bool) -> None:
        if compact == self.has_class("compact"):
            return
        self.set_class(compact, "compact")
        if self._last is not None:
            self.update_device(*self._last)


def short_name(name: str) -> str:
    """'NVIDIA GeForce RTX 3090' -> 'RTX 3090' for the compact layout."""
    for prefix in ("NVIDIA ", "GeForce ", "Tesla "):
        if name.startswith(prefix):
            name = name[len(prefix) :]
    return name
