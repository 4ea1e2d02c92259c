"""`gputui replay FILE`: the dashboard driven by a recording, with a time bar.

The same app as live (panels, tables, details, history), reading a `ReplaySource`;
this adds the time bar (widgets/time_bar.py) and its keys: space (or p) pauses and
plays, `.` and `,` step one recorded poll, `x` cycles the speed (x1, x10, x60), `g`
jumps to a time, `n` and `b` to the next and previous alert. A jump back in time starts
the charts' history afresh (it holds one forward run of time).
"""

from __future__ import annotations

from typing import Any

from textual.binding import Binding
from textual.widgets import Footer

from gputui.history.metrics import History
from gputui.history.processes import ProcessHistory
from gputui.model.alert import AlertChange
from gputui.sources.replay.source import ReplaySource
from gputui.tui.app import GpuTuiApp
from gputui.tui.messages import DashboardReady
from gputui.tui.poller import Polled
from gputui.tui.views.replay_time import clock_text, next_mark, next_speed, step_time
from gputui.tui.widgets.time_bar import TimeBar


class ReplayApp(GpuTuiApp):
    """The dashboard on a recording."""

    BINDINGS = [
        *GpuTuiApp.BINDINGS,
        Binding("space", "toggle_pause", "Play/pause", priority=True),
        Binding("full_stop", "step(True)", "Step", key_display="."),
        Binding("comma", "step(False)", "Back", key_display=","),
        Binding("x", "speed", "Speed"),
        Binding("g", "jump", "Jump"),
        Binding("n", "alert(True)", "Next alert"),
        Binding("b", "alert(False)", "Prev alert"),
    ]

    def __init__(
        self,
        source: ReplaySource,
        *,
        alerts: list[AlertChange],
        times: list[float],
        **kw: Any,
    ) -> None:
        kw.setdefault("readonly", True)
        super().__init__(source, **kw)
        self.replay = source
        self.alert_changes = alerts
        self.alert_times = sorted({a.timestamp for a in alerts})
        self.times = times
        self.time_bar = TimeBar(source.span, self.alert_times)

    async def on_dashboard_ready(self, message: DashboardReady) -> None:
        await self.dashboard.mount(self.time_bar, before=self.dashboard.query_one(Footer))
        await super().on_dashboard_ready(message)
        self._show_time()

    async def on_polled(self, message: Polled[Any]) -> None:
        await super().on_polled(message)
        self._show_time()

    def _alert_here(self, at: float) -> str | None:
        """The alert changes of the poll shown, in words."""
        shown = self.latest_snapshot.timestamp if self.latest_snapshot is not None else at
        here = [a for a in self.alert_changes if abs(a.timestamp - shown) < 1e-6]
        if not here:
            return None
        return "; ".join(f"{a.rule} {a.state}: {a.message}" for a in here)

    def _show_time(self) -> None:
        at = self.replay.now()
        self.time_bar.span = self.replay.span  # a recording still being written grows
        if self.time_bar.is_attached:
            self.time_bar.show(at, self.replay.speed, self.replay.paused, self._alert_here(at))

    def _moved(self, to: float, *, pause: bool) -> None:
        """Go to `to`: the history restarts when time went back; a poll shows it now."""
        if to < self.replay.now():
            self.history = History(maxlen=900, min_spacing_s=1.0)
            self.process_history = ProcessHistory()
        self.replay.seek(to)
        if pause:
            self.replay.set_paused(True)
        self._show_time()
        self.poller.arm(0)  # replaces the poll armed, so one chain of polls goes on

    # -- keys ----------------------------------------------------------------------------------

    def action_toggle_pause(self) -> None:
        self.replay.set_paused(not self.replay.paused)
        self._show_time()
        self._show_header()

    def action_step(self, forward: bool) -> None:
        if forward and self.times and self.replay.now() >= self.times[-1]:
            self.times = self.replay.recording.times()  # polls recorded since it opened
        to = step_time(self.times, self.replay.now(), forward)
        if to is not None:
            self._moved(to, pause=True)

    def action_speed(self) -> None:
        self.replay.set_speed(next_speed(self.replay.speed))
        self._show_time()

    def action_alert(self, forward: bool) -> None:
        to = next_mark(self.alert_times, self.replay.now(), forward)
        if to is None:
            self.notify("no alert " + ("after" if forward else "before") + " this moment",
                        timeout=3)  # fmt: skip
            return
        self._moved(to, pause=True)

    def action_jump(self) -> None:
        from gputui.tui.screens.jump import JumpScreen

        def jumped(to: float | None) -> None:
            if to is None:
                return
            t0, t1 = self.replay.span
            if not t0 <= to <= t1:
                self.notify(
                    f"{clock_text(to)} is outside the recording "
                    f"({clock_text(t0)} to {clock_text(t1)})", severity="warning", timeout=5,
                )  # fmt: skip
                return
            self._moved(to, pause=self.replay.paused)

        self.push_screen(JumpScreen(self.replay.now()), jumped)
