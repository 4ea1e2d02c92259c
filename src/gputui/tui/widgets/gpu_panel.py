"""One GPU: utilization and memory bars with history, and the rest in one or two lines.

One widget that renders its lines itself. The first version nested Textual's
ProgressBar, a value label and a sparkline per metric in containers: 19
widgets per GPU, and the compositor re-renders every container under a
changed child, so 8 GPUs cost ~225 widget renders per poll. Drawing the same
bars here cut the dashboard's steady CPU roughly in half (benchmarks/tui.py).
Colours still come from the .tcss file, through component classes.

The `compact` class (4+ GPUs or a short terminal) switches to two lines per GPU
without a border; it is a CSS class, so switching costs a relayout, not a
recompose.

A panel can take focus (tab); `enter` or a click posts `GpuPanel.Selected`,
on which the app opens the device details view (tui/screens/device.py). The
bottom border shows the bus id, PCIe link, encoder/decoder and persistence
mode; a GPU in MIG mode lists its MIG devices under its stats, one line each.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import cast

from rich.style import Style
from rich.text import Span, Text
from textual import events
from textual.binding import Binding
from textual.message import Message

from gputui.core.textsafe import markup_safe
from gputui.model.gpm import sms_mostly_idle
from gputui.model.snapshot import DeviceSnapshot
from gputui.tui.views import formatting as fmt
from gputui.tui.views.device_facts import gpm_text, mig_line, subtitle
from gputui.tui.widgets import gpu_row
from gputui.tui.widgets.text_lines import TextLines

HOT_PERCENT = 90.0
BAR_MAX_FULL = 40
BAR_MAX_COMPACT = 24
NAME_WIDTH = 18


def bar_parts(
    percent: float | None, width: int, fill: Style, back: Style
) -> list[tuple[str, Style]]:
    """A bar like Textual's ProgressBar: heavy '━' cells, a half cell '╸', thin '─' for the rest."""
    if width <= 0:
        return []
    cells = max(0.0, min(1.0, (percent or 0.0) / 100.0)) * width
    full = int(cells)
    half = cells - full >= 0.5 and full < width
    # A thin line for the rest: the bar still reads without colour (NO_COLOR, monochrome).
    return [
        ("━" * full, fill),
        ("╸" if half else "", fill),
        ("─" * (width - full - (1 if half else 0)), back),
    ]


def bar(percent: float | None, width: int, fill: Style, back: Style) -> Text:
    return assemble(bar_parts(percent, width, fill, back))


def assemble(parts: Iterable[tuple[str, Style | None]]) -> Text:
    """The Text that `Text.append(text, style)` part by part builds, built at once.

    Each append strips control codes from its piece and re-measures the Text; the panels
    append ~25 pieces per GPU per poll. Here the pieces are joined and the spans laid
    out in one go, the control codes stripped once (there are none: NVML strings are
    sanitised where they enter, textsafe.visible)."""
    plain: list[str] = []
    spans: list[Span] = []
    pos = 0
    for piece, style in parts:
        if piece:
            end = pos + len(piece)
            if style:
                spans.append(Span(pos, end, style))
            plain.append(piece)
            pos = end
    return Text("".join(plain), spans=spans, no_wrap=True, end="")


def stats_parts(
    dev: DeviceSnapshot, compact: bool, warn: Style | str = "bold", events: str = ""
) -> list[tuple[str, Style | str | None]]:
    """Everything but utilization and memory, as (text, style) pieces; `N/A` wherever the
    device did not say. Neighbouring pieces of one style are one piece (one segment).
    `events`: the GPU's XIDs of the session (tui/alert_log.py), a warning when not ""."""
    s = dev.sample
    if dev.failed is not None or s is None:
        return [(f"FAILED: {dev.failed or 'no data'}", warn)]
    sep = " " if compact else "  "
    limit = s.power_limit_w or dev.info.power_limit_w
    # One N/A per field, with its label: never "N/A°C" or "N/A/N/A W".
    parts = sep.join(
        [
            "temp N/A" if s.temperature_c is None else f"{s.temperature_c}°C",
            f"fan {fmt.na(s.fan_pct, '{}%')}",
            power_text(s.power_w, limit),
            f"SM {fmt.na(s.sm_clock_mhz, '{} MHz')}",
            f"MEM {fmt.na(s.mem_clock_mhz, '{} MHz')}",
            "P-state N/A" if s.performance_state is None else fmt.pstate(s.performance_state),
            pcie_text(s.pcie_rx_kbs, s.pcie_tx_kbs),
        ]
    )
    warnings = []
    disagree = sms_mostly_idle(s.utilization_gpu, s.sm_active_pct)
    if disagree:
        warnings.append(f"busy {s.utilization_gpu}%, SMs {s.sm_active_pct:.0f}%")
    gpm = "" if compact and disagree else gpm_text(s, compact)  # said once in the warning
    if gpm:
        parts = gpm + sep + parts if compact else parts + "\n" + gpm
    if s.throttle_reasons:
        warnings.append("throttle: " + ", ".join(s.throttle_reasons))
    if s.ecc_volatile_uncorrected:
        warnings.append(f"ECC errors: {s.ecc_volatile_uncorrected}")
    if events:
        warnings.append(events)
    if not warnings:
        return [(parts, None)]
    if compact:
        # One line; warnings first so a narrow terminal still shows them.
        return [(sep.join(warnings), warn), (sep + parts, None)]
    return [(parts + "\n", None), (sep.join(warnings), warn)]


def stats_line(
    dev: DeviceSnapshot, compact: bool, warn: Style | None = None, events: str = ""
) -> Text:
    """`stats_parts` as a Text (what the tests and the line count read)."""
    if dev.failed is not None or dev.sample is None:
        return Text(
            f"FAILED: {dev.failed or 'no data'}", style=warn or "bold", no_wrap=True, end=""
        )
    text = Text(no_wrap=True, overflow="ellipsis", end="")
    for piece, style in stats_parts(dev, compact, warn or "bold", events):
        text.append(piece, style)
    return text


def power_text(power_w: float | None, limit_w: float | None) -> str:
    if power_w is None:
        return "power N/A" if limit_w is None else f"power N/A (limit {limit_w:.0f} W)"
    return f"{power_w:.0f} W" if limit_w is None else f"{power_w:.0f}/{limit_w:.0f} W"


def pcie_text(rx: int | None, tx: int | None) -> str:
    if rx is None and tx is None:
        return "PCIe N/A"
    return f"PCIe rx {fmt.throughput_kbs(rx)} tx {fmt.throughput_kbs(tx)}"


def compact_gib(value: int) -> str:
    """A whole number of GiB only when it is one: 79.65 GiB is "79.7", not an 80 GiB card's "80"."""
    gib = value / fmt.GIB
    return f"{gib:.0f}" if abs(gib - round(gib)) < 0.05 else f"{gib:.1f}"


def title(dev: DeviceSnapshot, card_label: str | None) -> str:
    parts = [f"GPU {dev.index}", dev.info.name]
    if card_label:
        parts.append(card_label)
    elif dev.info.architecture:
        parts.append(dev.info.architecture.capitalize())
    return " · ".join(parts)


def short_name(name: str) -> str:
    """'NVIDIA GeForce RTX 3090' -> 'RTX 3090' for the compact layout."""
    for prefix in ("NVIDIA ", "GeForce ", "Tesla "):
        if name.startswith(prefix):
            name = name[len(prefix) :]
    return name


class GpuPanel(TextLines, can_focus=True):
    BINDINGS = [Binding("enter", "select", "Details", show=False)]

    class Selected(Message):
        """The user asked for this GPU's details (enter on the panel, or a click)."""

        def __init__(self, index: int) -> None:
            super().__init__()
            self.index = index

    COMPONENT_CLASSES = {
        "gpu-panel--label",
        "gpu-panel--name",
        "gpu-panel--bar",
        "gpu-panel--bar-hot",
        "gpu-panel--bar-back",
        "gpu-panel--spark",
        "gpu-panel--stats",
        "gpu-panel--warning",
    }

    def __init__(self, index: int) -> None:
        super().__init__(classes="gpu-panel", id=f"gpu-{index}")
        self.index = index
        self.card_label: str | None = None
        self.device: DeviceSnapshot | None = None
        self.util_history: Sequence[float | None] = ()
        self.mem_history: Sequence[float | None] = ()
        self._state: tuple[bool, bool, str] | None = None  # (failed, compact, theme) in _draw
        self._title: str | None = None
        self._subtitle: str | None = None
        self.events = ""  # the GPU's XIDs of the session, a warning (update_device)
        self._version = 0  # bumped by each update_device
        self._painted = -1  # the _version last painted on screen
        self._drawn: tuple[tuple[object, ...], Text] | None = None  # render()'s last text

    def action_select(self) -> None:
        self.post_message(self.Selected(self.index))

    def on_click(self, event: events.Click) -> None:
        self.post_message(self.Selected(self.index))

    def style_state(self) -> tuple[object, ...]:
        """The panel's CSS selects on its failed and compact classes too; read once per
        draw (`render` sets `_state`), not for every piece of text."""
        return self._state or (self.has_class("failed"), self.has_class("compact"), self.app.theme)

    # -- data in ----------------------------------------------------------------------------

    def update_device(
        self,
        dev: DeviceSnapshot,
        util_history: Sequence[float | None],
        mem_history: Sequence[float | None],
        events: str | None = None,
    ) -> None:
        """`events`: the GPU's XIDs of the session as a warning ("" none; None: unchanged)."""
        old, old_events = self.device, self.events
        self.device, self.util_history, self.mem_history = dev, util_history, mem_history
        if events is not None:
            self.events = events
        failed = dev.failed is not None or dev.sample is None
        self.set_class(failed, "failed")
        label = title(dev, self.card_label)
        if self._title != label:
            # A border title is markup: a GPU named "[red]x" must not change colours.
            self._title = label
            self.border_title = markup_safe(label)
        sub = subtitle(dev)
        if self._subtitle != sub:
            self._subtitle = sub
            self.border_subtitle = markup_safe(sub)
        # Height changes only when the warning line comes or goes (full layout).
        layout = old is None or self._line_count(old, old_events) != self._line_count(dev)
        # An idle GPU draws the same text poll after poll (0 %, the same temperature, a
        # flat sparkline): no repaint then. The text is drawn now, and kept for render().
        # A panel not painted since the last poll (scrolled out of #gpus with many GPUs)
        # is only marked: drawing its text to compare would be work for nothing.
        drawn, previous = self._drawn, self._version
        self._version += 1
        if layout or drawn is None or self._painted != previous:
            self.refresh(layout=layout)
        elif self.render() != drawn[1]:
            self.refresh()
        else:
            self._painted = self._version  # the screen already shows this text

    def content_drawn(self) -> None:
        self._painted = self._version

    def notify_style_update(self) -> None:
        # A theme or CSS change alters the component styles inside the kept text.
        super().notify_style_update()
        self._drawn = None

    def set_compact(self, compact: bool, row: bool = False) -> None:
        """compact: two lines without a border; row (with compact): one line (gpu_row.py)."""
        row = row and compact
        if compact != self.has_class("compact") or row != self.has_class("row"):
            self.set_class(compact, "compact")
            self.set_class(row, "row")
            self.refresh(layout=True)

    def _line_count(self, dev: DeviceSnapshot, events: str | None = None) -> int:
        if self.has_class("row"):
            return 1
        if self.has_class("compact"):
            return 2 + len(dev.mig_devices)
        shown = self.events if events is None else events
        lines = stats_line(dev, False, events=shown).plain.split("\n")
        return 2 + len(lines) + len(dev.mig_devices)

    def rows(self) -> int:
        """Lines on screen, border included, as the layout classes make them (the graphs
        beside the panels match them before the panels are laid out)."""
        if self.device is None:
            return 0
        return self._line_count(self.device) + (0 if self.has_class("compact") else 2)

    def mig_text(self) -> str:
        """The MIG lines under the stats ("" without MIG devices); also what the tests read."""
        dev = self.device
        if dev is None:
            return ""
        return "\n".join(mig_line(dev.index, m) for m in dev.mig_devices)

    # -- values, as plain strings (also what the tests read) ----------------------------------

    def util_value(self) -> str:
        s = self.device.sample if self.device else None
        util = None if s is None or self.has_class("failed") else s.utilization_gpu
        return fmt.na(util, "{:>3} %")

    def _memory(self) -> tuple[int | None, int | None, float | None]:
        dev = self.device
        s = dev.sample if dev else None
        total = None if s is None or dev is None else (s.memory_total or dev.info.memory_total)
        used = None if s is None or self.has_class("failed") else s.memory_used
        return used, total, fmt.percent_of(used, total)

    def mem_value(self, compact: bool) -> str:
        used, total, pct = self._memory()
        if total is None:
            return fmt.NA  # one N/A for the field, never "N/A/N/AG"
        if compact:
            return f"{fmt.gib(used)}/{compact_gib(total)}G"
        if used is None:
            return f"N/A of {fmt.gib(total)} GiB"
        pct_text = fmt.na(None if pct is None else round(pct), "{:>3}%")
        return f"{fmt.gib(used)} / {fmt.gib(total)} GiB {pct_text}"

    def stats_text(self) -> str:
        return (
            ""
            if self.device is None
            else stats_line(self.device, self.has_class("compact"), events=self.events).plain
        )

    # -- drawing ----------------------------------------------------------------------------

    def _metric(
        self,
        label: str,
        percent: float | None,
        value: str,
        history: Sequence[float | None],
        width: int,
        bar_max: int,
        value_width: int,
    ) -> list[tuple[str, Style | None]]:
        """label, bar, value, sparkline in `width` cells; bars align when value_width does."""
        style = self.component_style
        fixed = len(label) + value_width + 2
        bar_w = max(0, min(bar_max, (width - fixed) // 2))
        spark_w = max(0, width - fixed - bar_w)
        hot = percent is not None and percent >= HOT_PERCENT
        fill = style("gpu-panel--bar-hot" if hot else "gpu-panel--bar")
        return [
            (label, style("gpu-panel--label")),
            *bar_parts(percent, bar_w, fill, style("gpu-panel--bar-back")),
            (f" {value.ljust(value_width)} ", None),
            (fmt.spark(history, spark_w), style("gpu-panel--spark")),
        ]

    def render(self) -> Text:
        """The panel's text, drawn once per data, width, class and theme (update_device
        compares it with the last one to skip repaints that would change nothing)."""
        key = (
            self._version,
            self.content_size.width,
            self.has_class("compact"),
            self.has_class("failed"),
            self.app.theme,
            self.has_class("row"),
        )
        drawn = self._drawn
        if drawn is not None and drawn[0] == key:
            return drawn[1]
        self._state = key[3], key[2], key[4]
        try:
            text = self._draw()
        finally:
            self._state = None
        self._drawn = (key, text)
        return text

    def _draw(self) -> Text:
        dev = self.device
        if dev is None:
            return Text("")
        width = self.content_size.width
        compact = self.has_class("compact")
        s = dev.sample
        util = None if s is None or self.has_class("failed") else s.utilization_gpu
        util_pct = None if util is None else float(util)
        _, _, mem_pct = self._memory()
        if compact and self.has_class("row"):
            return self._draw_row(dev, width, util_pct, mem_pct)
        # The stats style over every piece, as stylize() over the line put it: spans in
        # order, none overlapping (text_lines draws those without Rich's style stack).
        stats_style = self.component_style("gpu-panel--stats")
        stats: list[tuple[str, Style | None]] = [
            (piece, stats_style if style is None else cast(Style, style) + stats_style)
            for piece, style in stats_parts(
                dev, compact, self.component_style("gpu-panel--warning"), self.events
            )
        ]
        if compact:
            name = f"{dev.index} {short_name(dev.info.name)}"[: NAME_WIDTH - 1].ljust(NAME_WIDTH)
            half = max(0, (width - NAME_WIDTH) // 2)
            rest = max(0, width - NAME_WIDTH - half)
            util_line = self._metric(
                "UTIL ", util_pct, self.util_value(), self.util_history, half, BAR_MAX_COMPACT, 5
            )
            mem_line = self._metric(
                " MEM ",
                mem_pct,
                self.mem_value(True).rjust(10),
                self.mem_history,
                rest,
                BAR_MAX_COMPACT,
                10,
            )
            out = assemble(
                [
                    (name, self.component_style("gpu-panel--name")),
                    *util_line,
                    *mem_line,
                    ("\n  ", None),
                ]
                + stats
            )
            self._append_migs(out, "  ")
            return out
        util_value, mem_value = self.util_value(), self.mem_value(False)
        out = assemble(
            [
                *self._metric(
                    "UTIL ", util_pct, util_value, self.util_history, width, BAR_MAX_FULL, 20
                ),
                ("\n", None),
                *self._metric(
                    "MEM  ", mem_pct, mem_value, self.mem_history, width, BAR_MAX_FULL, 20
                ),
                ("\n", None),
                *stats,
            ]
        )
        self._append_migs(out, "")
        return out

    def _draw_row(
        self, dev: DeviceSnapshot, width: int, util_pct: float | None, mem_pct: float | None
    ) -> Text:
        style = self.component_style
        name = (gpu_row.row_name(dev.index, short_name(dev.info.name)), style("gpu-panel--name"))
        if dev.failed is not None or dev.sample is None:
            return assemble(gpu_row.failed_row(name[0], dev, style("gpu-panel--warning")))
        tail, warnings = gpu_row.row_tail(dev), gpu_row.row_warnings(dev)
        util_w, mem_w = gpu_row.split_middle(width, len(tail) + len(warnings))
        return assemble(
            [
                name,
                *self._metric(
                    "", util_pct, self.util_value(), self.util_history, util_w, BAR_MAX_COMPACT, 5
                ),
                *self._metric(
                    "",
                    mem_pct,
                    self.mem_value(True).rjust(10),
                    self.mem_history,
                    mem_w,
                    BAR_MAX_COMPACT,
                    10,
                ),
                (tail, style("gpu-panel--stats")),
                (warnings, style("gpu-panel--warning")),
            ]
        )

    def _append_migs(self, out: Text, indent: str) -> None:
        dev = self.device
        if dev is None or not dev.mig_devices or dev.failed is not None:
            return
        style = self.component_style("gpu-panel--stats")
        for m in dev.mig_devices:
            out.append("\n" + indent + "└ ", self.component_style("gpu-panel--label"))
            out.append(mig_line(dev.index, m), style)
