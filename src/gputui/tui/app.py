"""The dashboard App: its data, the poll's outcomes drawn, and a clean exit.

Polling is the shared Poller's (poller.py): one thread worker per poll, the
next one armed only when this app has handled the last. The worker posts the
immutable Snapshot to the UI thread, which only renders it. What the keys do
is the DashboardActions mixin's (dashboard_actions.py).

Start-up: a first poll begun before Textual was imported (first_poll.py) is drawn
in the first frame; what that frame does not need (the catalog's card labels, the
fit line's first pass) starts once it is painted, so that neither their imports
nor their threads slow it down.
"""

from __future__ import annotations

import contextlib
import socket
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Literal

from textual import work
from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.css.query import NoMatches
from textual.screen import ModalScreen, Screen

from gputui.core.textsafe import visible
from gputui.history.metrics import History
from gputui.history.processes import ProcessHistory
from gputui.model.alert import AlertChange
from gputui.model.snapshot import Snapshot
from gputui.sources.base import Source
from gputui.sources.host.source import read_ancestors, read_extras
from gputui.tui.alert_log import AlertLog
from gputui.tui.dashboard_actions import INTERVALS, DashboardActions
from gputui.tui.first_poll import FirstPoll
from gputui.tui.messages import CardsMatched, DashboardReady
from gputui.tui.poller import Polled, PolledApp, Poller, PollFailed
from gputui.tui.screens.dashboard import CSS_PATHS, DashboardScreen
from gputui.tui.settings import Settings
from gputui.tui.terminal import HangUp
from gputui.tui.views.cards import CardLookup, catalog_labels
from gputui.tui.views.kill import KillPolicy
from gputui.tui.widgets.fit_line import FitLine
from gputui.tui.widgets.info_bar import HeaderFacts
from gputui.tui.widgets.process_table import ParentsOf, ProcessTable

TYPE_CHECKING = False  # typing.TYPE_CHECKING; the screen itself is imported when opened
if TYPE_CHECKING:
    from gputui.alerts.rules import Rule
    from gputui.tui.screens.process import ExtrasOf


# An alert's severity as a notification's.
NOTIFY_SEVERITY: dict[str, Literal["information", "warning", "error"]] = {
    "info": "information",
    "warning": "warning",
    "critical": "error",
}


def _wall_clock() -> str:
    return time.strftime("%H:%M:%S")


def _poll_error(exc: Exception) -> str:
    # An exception text may quote NVML strings or file contents: shown, not obeyed.
    return f"{type(exc).__name__}: {visible(str(exc))}" if str(exc) else type(exc).__name__


def _first_outcome(first: FirstPoll, *, wait: bool = False) -> Polled[Snapshot] | PollFailed:
    """The first poll as the poller's own messages (`wait`: on a worker thread, until it ends)."""
    if wait:
        first.wait()
    if first.result is not None:
        return Polled(first.result, first.elapsed_s)
    error = first.error or RuntimeError("the first poll gave nothing")
    return PollFailed(_poll_error(error), first.elapsed_s)


class GpuTuiApp(PolledApp, HangUp, DashboardActions, App[int]):
    TITLE = "gputui"
    CSS_PATH = CSS_PATHS
    ENABLE_COMMAND_PALETTE = True
    INTERVALS = INTERVALS

    # Keys that mean the same on every screen. The dashboard's own keys (sort, filter,
    # kill, pause...) are DashboardScreen.BINDINGS: on the Catalog and Fit screens they
    # neither act on the hidden dashboard nor show in the footer.
    BINDINGS = [
        Binding("q", "quit", "Quit"),
        Binding("ctrl+c", "quit", "Quit", show=False, priority=True),
        Binding("question_mark", "help", "Help", key_display="?"),
        # As in nvitop and nvtop: the shell's job control (`fg` brings it back). Textual
        # restores the terminal before the stop and redraws on SIGCONT; a focused Input
        # keeps ctrl+z as its own undo.
        Binding("ctrl+z", "suspend_process", "Suspend", show=False),
    ]

    def __init__(
        self,
        source: Source,
        *,
        fallback_reason: str | None = None,
        interval: float = 1.0,
        readonly: bool = False,
        clock: Callable[[], str] | None = None,
        hostname: str | None = None,
        kill_policy: KillPolicy | None = None,
        history: History | None = None,
        card_lookup: CardLookup | None = catalog_labels,
        models_path: Path | None = None,
        watch_terminal: bool = False,
        exit_watchdog_s: float | None = None,
        process_extras: ExtrasOf = read_extras,
        parents_of: ParentsOf = read_ancestors,
        settings: Settings | None = None,
        first_poll: FirstPoll | None = None,
        catalog_in_child: bool = False,
        alert_rules: tuple[Rule, ...] | None = None,
    ) -> None:
        """`first_poll`: the first poll, already running (run.py); `catalog_in_child`: a
        catalog cache miss is validated by a child process (catalog/loader.py)."""
        super().__init__()
        if interval <= 0:
            raise ValueError("interval must be positive")
        self.source = source
        self.fallback_reason = fallback_reason
        self.poller = Poller(
            self,
            self._read_source,
            interval=interval,
            name="poll",
            describe=_poll_error,
            before_poll=self._terminal_still_there,
        )
        self.readonly = readonly
        self.clock = clock or _wall_clock
        self.hostname = hostname
        self.kill_policy = kill_policy or KillPolicy()
        # 15 minutes at one point per second, at any interval: the history view's longest window.
        self.history = history if history is not None else History(maxlen=900, min_spacing_s=1.0)
        self.card_lookup = card_lookup
        self.models_path = models_path
        self.watch_terminal = watch_terminal
        self.exit_watchdog_s = exit_watchdog_s
        # What the host says about a process beyond the poll: read on demand, real PIDs only.
        self.process_extras = process_extras
        self.parents_of = parents_of
        self.process_history = ProcessHistory()
        self.settings = settings  # applied when the dashboard is ready (settings_apply.py)
        # The state once the saved settings applied, and at quit: run.py saves what differs.
        self.start_settings: Settings | None = None
        self.exit_settings: Settings | None = None

        self.latest_snapshot: Snapshot | None = None
        self._dashboard_stale = False
        self.poll_count = 0
        self.last_poll_s: float | None = None
        self.last_error: str | None = None
        self._header_drawn_at = -1.0
        self._cards_requested = False
        self.cards_matched = card_lookup is None
        self.first_poll = first_poll
        self.catalog_in_child = catalog_in_child
        self._after_first_frame_due = True  # _after_first_frame not scheduled yet
        self._seen_notices: set[str] = set()
        self.alert_log = AlertLog(alert_rules)  # the rules, run once per poll (alert_log.py)
        self.dashboard = DashboardScreen(
            getattr(source, "name", "nvml"), fallback_reason, first_poll=first_poll
        )

    def _pace_changed(self) -> None:
        self._show_header()

    def _read_source(self) -> Snapshot:
        """On the poll's worker thread."""
        return self.source.poll()

    # -- lifecycle --------------------------------------------------------------------------

    def get_default_screen(self) -> Screen[Any]:
        return self.dashboard

    def on_mount(self) -> None:
        self.app_resume_signal.subscribe(self, self._repaint_everything)

    def _repaint_everything(self, _app: object = None) -> None:
        """After `fg`: the shell may have cleared the screen while the app was stopped, and
        Textual sends only the lines it thinks changed, so a line that did not (the
        banner, a border) would stay blank: every widget paints again."""
        self.screen.refresh(layout=True)
        for widget in self.screen.walk_children():
            widget.refresh()

    async def on_dashboard_ready(self, message: DashboardReady) -> None:
        if self.settings is not None:
            from gputui.tui.settings_apply import apply_settings

            for warning in apply_settings(self, self.dashboard, self.settings):
                self.notify(warning, severity="warning", timeout=8, markup=False)
            self.start_settings = self._settings_now()
        self._show_header()
        self.dashboard.query_one(ProcessTable).focus()
        # The header clock ticks on its own: at a 30 s interval it must not stand still.
        self.set_interval(1.0, self._tick_clock, name="clock")
        await self._start_polling()

    async def _start_polling(self) -> None:
        """The first poll's outcome now when it has ended (drawn in the first frame), else
        when it ends; without one, a poll now. Either way one poll at a time."""
        first, self.first_poll = self.first_poll, None
        if first is None:
            self.poller.poll_now()
            return
        self.poller.in_flight = True
        if first.done:
            outcome = _first_outcome(first)
            if isinstance(outcome, Polled):
                await self.on_polled(outcome)
            else:
                self.on_poll_failed(outcome)
        else:
            self.run_worker(
                lambda: self.post_message(_first_outcome(first, wait=True)),
                thread=True,
                exit_on_error=False,
                group="poll",
                description="first poll",
            )

    def _tick_clock(self) -> None:
        # At 1 s or faster each poll redraws the header, clock included: a tick of its own
        # would be a second frame per second for nothing. A slow or failing poll does not.
        if time.monotonic() - self._header_drawn_at < 0.9:
            return
        if self._dashboard_visible() and not self._shutting_down():
            with contextlib.suppress(NoMatches):  # the screen may be tearing down
                self._show_header()

    def _before_hang_up(self) -> None:
        self.remember_settings()

    def _shutting_down(self) -> bool:
        """A poll that finishes while the app exits has no widgets left to fill.

        `is_attached` is False once `exit()` was called; `is_running` once shutdown began.
        """
        return not self.is_running or not self.dashboard.is_attached

    async def action_quit(self) -> None:
        self.remember_settings()
        self.exit(0)

    def remember_settings(self) -> None:
        """The dashboard's settings as they are now, read while its widgets still exist."""
        with contextlib.suppress(Exception):  # a screen tearing down: keep what was read
            self.exit_settings = self._settings_now()

    def _settings_now(self) -> Settings:
        from gputui.tui.settings_apply import current_settings

        return current_settings(self, self.dashboard, self.interval, self.settings or Settings())

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        from gputui.tui.palette import dashboard_commands

        yield from super().get_system_commands(screen)
        yield from dashboard_commands(self)

    # -- the poll's outcomes ----------------------------------------------------------------

    async def on_polled(self, message: Polled[Snapshot]) -> None:
        self.poller.done()
        self.last_poll_s = message.elapsed_s
        if self._shutting_down():
            return
        try:
            await self.apply_snapshot(message.result)
        except NoMatches:  # the app began tearing the screen down meanwhile
            return
        if self.last_error is not None:
            self.last_error = None
            self.dashboard.show_status(None)
            self.notify("polling recovered", timeout=3)
        self.poller.next_in(self.interval - message.elapsed_s)

    def on_poll_failed(self, message: PollFailed) -> None:
        self.poller.done()
        self.last_poll_s = message.elapsed_s
        if self._shutting_down():
            return
        first = self.last_error is None
        self.last_error = message.error
        self.dashboard.show_status(
            f"poll failed at {self.clock()}: {message.error} (retrying every {self.interval:g} s)"
        )
        if first:
            self.notify(
                message.error, title="poll failed", severity="error", timeout=5, markup=False
            )
        self.poller.next_in(self.interval - message.elapsed_s)

    async def apply_snapshot(self, snap: Snapshot) -> None:
        """Render one snapshot (the UI-thread half of a poll; also used by the benchmark)."""
        await self.dashboard.ensure_panels(snap)
        previous = self.latest_snapshot
        self.latest_snapshot = snap
        self.poll_count += 1
        # A source frozen in time (screenshots, tests) repeats its timestamp: no new history point.
        if previous is None or snap.timestamp != previous.timestamp:
            self.history.add(snap)
            self.process_history.add(snap)
        self.dashboard.query_one(ProcessTable).parents_of = (
            None if snap.simulated else self.parents_of
        )
        if self._dashboard_visible():
            self._render_dashboard(snap)
        else:
            # A full screen (catalog, fit) covers the dashboard: drawing its widgets now
            # is wasted work. Catch up once it is shown again (on_screen_resume).
            self._dashboard_stale = True
        active = self.screen
        if active is not self.dashboard:
            update = getattr(active, "update_snapshot", None)
            if callable(update):
                update(snap)
        for change in self.alert_log.update(snap):
            if change.state == "firing":
                self._notify_alert(change)
        for notice in snap.notices:
            if notice not in self._seen_notices:
                self._seen_notices.add(notice)
                self.notify(notice, timeout=8, markup=False)
        if self._after_first_frame_due:
            self._after_first_frame_due = False
            self.call_after_refresh(self._after_first_frame)
        elif self.cards_wanted(snap):
            self._match_cards(snap)

    def _notify_alert(self, change: AlertChange) -> None:
        action = f"\n→ {change.action}" if change.action else ""
        self.notify(
            change.message + action,
            title=f"alert: {change.rule}",
            severity=NOTIFY_SEVERITY[change.severity],
            timeout=10,
            markup=False,
        )

    def cards_wanted(self, snap: Snapshot) -> bool:
        """Card labels are asked for once, for the first snapshot that has GPUs."""
        if self._cards_requested or self.card_lookup is None or not snap.devices:
            return False
        self._cards_requested = True
        return True

    def _after_first_frame(self) -> None:
        """What the first frame did not need: the card labels, then the fit line's first pass
        (released on CardsMatched, after the catalog flag below is set)."""
        snap = self.latest_snapshot
        self._match_cards(snap if snap is not None and self.cards_wanted(snap) else None)

    def _dashboard_visible(self) -> bool:
        """True when the dashboard is on top, or only modal dialogs lie over it."""
        for screen in reversed(self.screen_stack):
            if screen is self.dashboard:
                return True
            if not isinstance(screen, ModalScreen):
                return False
        return False

    def _render_dashboard(self, snap: Snapshot) -> None:
        self._dashboard_stale = False
        self._show_header()
        self.dashboard.show_banner(snap.source, self.fallback_reason)
        self.dashboard.update_snapshot(
            snap, self._recent, self.history, self.alert_log.panel_warnings()
        )

    def _recent(self, device_index: int, metric: str) -> list[float]:
        """The newest points of a series, as many as a sparkline on this screen can draw."""
        return self.history.last(device_index, metric, max(1, self.size.width))

    def dashboard_resumed(self) -> None:
        if self._dashboard_stale and self.latest_snapshot is not None:
            self._render_dashboard(self.latest_snapshot)

    @work(thread=True, exit_on_error=False, group="cards", description="card labels")
    def _match_cards(self, snap: Snapshot | None) -> None:
        """`snap`: the GPUs to label (None: none, only the catalog flag)."""
        if self.catalog_in_child:
            # Before this process loads the catalog (here or in the fit line's pass): a
            # cache miss is validated by a child, so pydantic never loads here.
            from gputui.catalog.loader import validate_in_child

            validate_in_child()
        lookup = self.card_lookup
        labels: dict[int, str] | None = None
        if lookup is not None and snap is not None:
            try:
                labels = lookup([d.info for d in snap.devices])
            except Exception:  # no catalog labels is a cosmetic loss, not an error
                labels = {}
        self.post_message(CardsMatched(labels))

    def on_cards_matched(self, message: CardsMatched) -> None:
        if self._shutting_down():
            return
        with contextlib.suppress(NoMatches):
            self.dashboard.query_one(FitLine).release()
        if message.labels is None:
            return
        self.cards_matched = True
        self.dashboard.set_card_labels(message.labels)
        if self.latest_snapshot is not None:
            self.dashboard.update_snapshot(self.latest_snapshot, self._recent)

    def _show_header(self) -> None:
        self._header_drawn_at = time.monotonic()
        snap = self.latest_snapshot
        table = self.dashboard.query_one(ProcessTable)
        host = self.hostname
        if host is None:
            host = (
                snap.host.hostname
                if snap is not None and snap.host
                else visible(socket.gethostname())
            )
        self.dashboard.show_header(
            HeaderFacts(
                hostname=host,
                driver=snap.driver_version if snap else None,
                cuda=snap.cuda_driver_version if snap else None,
                nvml=snap.nvml_version if snap else None,
                interval_s=self.interval,
                clock=self.clock(),
                source=snap.source if snap else getattr(self.source, "name", "?"),
                paused=self.paused,
                readonly=self.readonly,
                filter=table.filter_text,
                mine=table.only_user,
                alerts=self.alert_log.firing_count,
            )
        )

    def filters_changed(self) -> None:
        """The process filter or "mine" changed: the header says what is in force."""
        self._show_header()
