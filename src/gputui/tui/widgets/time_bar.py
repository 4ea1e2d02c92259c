"""The replay's time bar: where in the recording the dashboard is, its pace, its alerts."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from gputui.tui.views.replay_time import bar_cells, clock_text


class TimeBar(Static):
    """Two lines: the state (play/pause, speed, time, alerts) and the bar itself."""

    DEFAULT_CSS = """
    TimeBar { height: 2; padding: 0 1; background: $boost; }
    """

    def __init__(self, span: tuple[float, float], alerts: list[float]) -> None:
        super().__init__("", id="time-bar")
        self.span = span
        self.alerts = alerts
        self.state = ("", 1.0, span[0], False)

    def show(self, at: float, speed: float, paused: bool, alert_text: str | None) -> None:
        self.state = (alert_text or "", speed, at, paused)
        self._draw()

    def on_resize(self) -> None:
        self._draw()

    def _draw(self) -> None:
        alert_text, speed, at, paused = self.state
        head = Text()
        head.append(" ❚❚ paused " if paused else " ▶ playing ", style="bold reverse")
        head.append(f" x{speed:g}  ", style="bold")
        head.append(clock_text(at), style="bold")
        head.append(f"   {clock_text(self.span[0])} → {clock_text(self.span[1])}")
        head.append(f"   alerts {len(self.alerts)}")
        if alert_text:
            head.append(f"   {alert_text}", style="bold red")
        width = max(1, self.size.width - 2)
        head.truncate(width, overflow="ellipsis")  # the bar keeps its own line
        bar = Text()
        for char in bar_cells(width, self.span, at, self.alerts):
            bar.append(char, style="bold red" if char == "▲" else "")
        head.append("\n")
        head.append_text(bar)
        self.update(head)
