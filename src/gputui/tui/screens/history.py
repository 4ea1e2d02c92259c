"""`h`: the history of one GPU (utilisation, memory, power, temperature, PCIe) over 1, 5 or 15 min.

The numbers come from the app's History (history/metrics.py), which keeps
15 minutes at one point per second whether or not this screen is open; the
screen only picks a window and a GPU and draws. It is redrawn on each poll
while it is on top (the app calls `update_snapshot`) and not at all otherwise.
A GPU that failed keeps the history it had and says why it stopped.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Static

from gputui.core.textsafe import visible
from gputui.history.metrics import History
from gputui.model.snapshot import DeviceSnapshot, Snapshot
from gputui.tui.widgets.history_chart import HistoryChart

WINDOWS_S = (60.0, 300.0, 900.0)


def window_label(seconds: float) -> str:
    return f"{seconds / 60:g} min"


class HistoryScreen(Screen[None]):
    DEFAULT_CSS = """
    HistoryScreen { layout: vertical; }
    #history-title { height: auto; padding: 0 1; background: $boost; }
    #history-scroll { height: 1fr; }
    """
    BINDINGS = [
        Binding("escape,h", "back", "Back"),
        Binding("w", "cycle_window", "Window"),
        Binding("1", "window(0)", "1 min", show=False),
        Binding("2", "window(1)", "5 min", show=False),
        Binding("3", "window(2)", "15 min", show=False),
        Binding("right,n", "gpu(1)", "Next GPU", key_display="→"),
        Binding("left,b", "gpu(-1)", "Prev GPU", key_display="←"),
    ]

    def __init__(self, history: History, snapshot: Snapshot | None, gpu: int | None = None) -> None:
        super().__init__(id="history")
        self.history = history
        self.snapshot = snapshot
        self.window_s = WINDOWS_S[1]
        indices = self._indices()
        self.gpu = gpu if gpu is not None and gpu in indices else (indices[0] if indices else 0)

    def compose(self) -> ComposeResult:
        yield Static(Text(""), id="history-title")
        with VerticalScroll(id="history-scroll"):
            yield HistoryChart(chart_height=2, id="history-chart")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self._draw()
        self._fit_charts()

    def on_resize(self) -> None:
        self._fit_charts()

    def _fit_charts(self) -> None:
        """The charts take the height the title and the footer leave (120x40: 5 rows each)."""
        scroll = self.query_one("#history-scroll", VerticalScroll)
        room = scroll.size.height or self.size.height - 3
        self.query_one(HistoryChart).fit_height(room)

    # -- data -------------------------------------------------------------------------------

    def _indices(self) -> list[int]:
        return [d.index for d in self.snapshot.devices] if self.snapshot else []

    def _device(self) -> DeviceSnapshot | None:
        if self.snapshot is None:
            return None
        return next((d for d in self.snapshot.devices if d.index == self.gpu), None)

    def update_snapshot(self, snapshot: Snapshot) -> None:
        """Called by the app after each poll while this screen is on top."""
        self.snapshot = snapshot
        if self.gpu not in self._indices() and self._indices():
            self.gpu = self._indices()[0]
        if self.is_mounted:
            self._draw()

    # -- actions ----------------------------------------------------------------------------

    def action_back(self) -> None:
        self.app.pop_screen()

    def action_window(self, which: int) -> None:
        self.window_s = WINDOWS_S[which]
        self._draw()

    def action_cycle_window(self) -> None:
        i = WINDOWS_S.index(self.window_s) if self.window_s in WINDOWS_S else 0
        self.action_window((i + 1) % len(WINDOWS_S))

    def action_gpu(self, step: int) -> None:
        indices = self._indices()
        if not indices:
            return
        pos = indices.index(self.gpu) if self.gpu in indices else 0
        self.gpu = indices[(pos + step) % len(indices)]
        self._draw()

    # -- drawing ----------------------------------------------------------------------------

    def title_text(self) -> Text:
        dev = self._device()
        text = Text(no_wrap=True, overflow="ellipsis")
        if dev is None:
            text.append("History: waiting for the first poll of the GPUs…", style="dim")
            return text
        count = len(self._indices())
        text.append(f"GPU {dev.index}: {visible(dev.info.name)}", style="bold")
        text.append(f"   last {window_label(self.window_s)}")
        kept = self.history.span_s(dev.index)
        if kept + 1 < self.window_s:
            text.append(f" (history so far: {kept:.0f} s)", style="dim")
        if count > 1:
            # The GPUs by their own numbers, this one marked: "1 of 2" beside "GPU 0" misled.
            others = " ".join(f"[{i}]" if i == dev.index else str(i) for i in self._indices())
            text.append(f"   GPUs {others}", style="dim")
        if dev.failed is not None or dev.sample is None:
            reason = dev.failed or "no data from this GPU"
            text.append(f"\nno new readings: {visible(reason)}", style="bold red")
        return text

    def _draw(self) -> None:
        self.query_one("#history-title", Static).update(self.title_text())
        dev = self._device()
        limit = None
        if dev is not None:
            limit = (dev.sample.power_limit_w if dev.sample else None) or dev.info.power_limit_w
        gpu, window = self.gpu, self.window_s
        self.query_one(HistoryChart).set_data(
            limit,
            lambda metric: self.history.window(gpu, metric, window),
            min(window, self.history.span_s(gpu)) if gpu is not None else 0.0,
        )
