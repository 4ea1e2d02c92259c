"""The dashboard App: polling, key bindings and actions.

Polling: one thread worker per poll, and the next poll is armed with
`set_timer` only when the previous one has finished, so a slow or hanging
source delays data but never piles up threads or blocks input. The worker
posts the immutable Snapshot to the UI thread, which only renders it.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import select
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from textual import work
from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.css.query import NoMatches
from textual.screen import ModalScreen, Screen
from textual.timer import Timer
from textual.widgets import DataTable

from gputui.core.textsafe import visible
from gputui.history.metrics import History
from gputui.history.processes import ProcessHistory
from gputui.model.snapshot import GpuProcess, Snapshot
from gputui.sources.base import Source
from gputui.sources.host.source import CONTAINER_NOTICE, read_ancestors, read_extras
from gputui.sources.host.source import why_not_visible as host_why_not_visible
from gputui.tui.messages import CardsMatched, DashboardReady, PollFailed, SnapshotReady
from gputui.tui.screens.dashboard import CSS_PATHS, DashboardScreen
from gputui.tui.screens.device import DeviceScreen
from gputui.tui.screens.help import HelpScreen
from gputui.tui.screens.kill import KillScreen
from gputui.tui.screens.process import NOT_VISIBLE, ExtrasOf, ProcessScreen
from gputui.tui.settings import Settings
from gputui.tui.views.cards import CardLookup, catalog_labels
from gputui.tui.views.kill import KillPolicy
from gputui.tui.widgets.gpu_panel import GpuPanel
from gputui.tui.widgets.info_bar import HeaderFacts
from gputui.tui.widgets.process_table import ParentsOf, ProcessTable

INTERVALS = (0.25, 0.5, 1.0, 2.0, 3.0, 5.0, 10.0, 30.0)


def _wall_clock() -> str:
    return time.strftime("%H:%M:%S")


class GpuTuiApp(App[int]):
    TITLE = "gputui"
    CSS_PATH = CSS_PATHS
    ENABLE_COMMAND_PALETTE = True

    # Keys that mean the same on every screen. The dashboard's own keys (sort, filter,
    # kill, pause...) are DashboardScreen.BINDINGS: on the Catalog and Fit screens they
    # neither act on the hidden dashboard nor show in the footer.
    BINDINGS = [
        Binding("q", "quit", "Quit"),
        Binding("ctrl+c", "quit", "Quit", show=False, priority=True),
        Binding("question_mark", "help", "Help", key_display="?"),
    ]

    # Shown in the help screen; the footer shows the BINDINGS marked show=True.
    HELP_KEYS = [
        ("q, ctrl+c", "quit"),
        ("p", "pause / resume polling"),
        ("+ / -", "poll faster / slower"),
        ("s", "cycle the sort column"),
        ("r", "reverse the sort order"),
        ("/", "filter processes by text"),
        ("m", "my processes only / everyone's"),
        ("enter", "all details of the selected process, or of the focused GPU"),
        ("t", "processes as a tree under their parents / flat"),
        ("space", "tag / untag the process (k signals all tagged)"),
        ("k", "kill the selected process (asks first: SIGINT i, SIGTERM t, SIGKILL K)"),
        ("mouse", "click a header: sort; a row: select (again: details); a GPU: its details"),
        ("tab / shift+tab", "move between panels"),
        ("c", "GPU catalog"),
        ("f", "will my model fit?"),
        ("e", "fit line: one summary line / one line per GPU (or click it)"),
        ("h", "history graphs of a GPU (w: 1 / 5 / 15 min)"),
        ("?", "this help"),
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
    ) -> None:
        super().__init__()
        if interval <= 0:
            raise ValueError("interval must be positive")
        self.source = source
        self.fallback_reason = fallback_reason
        self.interval = interval
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
        self.exit_settings: Settings | None = None  # the state at quit, for run.py to save

        self.latest_snapshot: Snapshot | None = None
        self._dashboard_stale = False
        self.paused = False
        self.poll_in_flight = False
        self.poll_count = 0
        self.last_poll_s: float | None = None
        self.last_error: str | None = None
        self._poll_timer: Timer | None = None
        self._header_drawn_at = -1.0
        self._cards_requested = False
        self.cards_matched = card_lookup is None
        self._seen_notices: set[str] = set()
        self.dashboard = DashboardScreen(getattr(source, "name", "nvml"), fallback_reason)

    # -- lifecycle --------------------------------------------------------------------------

    def get_default_screen(self) -> Screen[Any]:
        return self.dashboard

    def on_dashboard_ready(self, message: DashboardReady) -> None:
        if self.settings is not None:
            from gputui.tui.settings_apply import apply_settings

            for warning in apply_settings(self, self.settings):
                self.notify(warning, severity="warning", timeout=8, markup=False)
        self._show_header()
        self.dashboard.query_one(ProcessTable).focus()
        # The header clock ticks on its own: at a 30 s interval it must not stand still.
        self.set_interval(1.0, self._tick_clock, name="clock")
        self._start_poll()

    def _tick_clock(self) -> None:
        # At 1 s or faster each poll redraws the header, clock included: a tick of its own
        # would be a second frame per second for nothing. A slow or failing poll does not.
        if time.monotonic() - self._header_drawn_at < 0.9:
            return
        if self._dashboard_visible() and not self._shutting_down():
            with contextlib.suppress(NoMatches):  # the screen may be tearing down
                self._show_header()

    # -- polling ----------------------------------------------------------------------------

    def _arm(self, delay: float) -> None:
        if self._poll_timer is not None:
            self._poll_timer.stop()
        # Textual's Timer divides by its delay: never arm with 0 (a poll slower than the interval).
        self._poll_timer = self.set_timer(max(0.01, delay), self._start_poll, name="poll")

    def _start_poll(self) -> None:
        self._poll_timer = None
        if self.paused or self.poll_in_flight:
            return
        if self.watch_terminal and _terminal_gone():
            self.hang_up()
            return
        self.poll_in_flight = True
        self._poll_worker()

    @work(thread=True, exit_on_error=False, group="poll", name="poll")
    def _poll_worker(self) -> None:
        started = time.perf_counter()
        try:
            snap = self.source.poll()
        except Exception as exc:  # any source failure is shown, never fatal
            # An exception text may quote NVML strings or file contents: shown, not obeyed.
            error = f"{type(exc).__name__}: {visible(str(exc))}" if str(exc) else type(exc).__name__
            self.post_message(PollFailed(error, time.perf_counter() - started))
        else:
            self.post_message(SnapshotReady(snap, time.perf_counter() - started))

    def hang_up(self, return_code: int = 0) -> None:
        """Exit for a signal or a vanished terminal, and make sure the process does end.

        Textual's shutdown joins its output thread; with the terminal gone that join
        can block for good (seen after the pty master closed). With a watchdog set,
        the process ends that many seconds later whatever Textual is doing.
        """
        self.remember_settings()
        self.exit(return_code)
        if self.exit_watchdog_s is not None:
            watchdog = threading.Timer(self.exit_watchdog_s, os._exit, args=(return_code,))
            watchdog.daemon = True
            watchdog.start()

    def _shutting_down(self) -> bool:
        """A poll that finishes while the app exits has no widgets left to fill."""
        return self._exit or self._closing or not self.dashboard.is_attached

    async def on_snapshot_ready(self, message: SnapshotReady) -> None:
        self.poll_in_flight = False
        self.last_poll_s = message.elapsed_s
        if self._shutting_down():
            return
        try:
            await self.apply_snapshot(message.snapshot)
        except NoMatches:  # the app began tearing the screen down meanwhile
            return
        if self.last_error is not None:
            self.last_error = None
            self.dashboard.show_status(None)
            self.notify("polling recovered", timeout=3)
        self._rearm_after(message.elapsed_s)

    def on_poll_failed(self, message: PollFailed) -> None:
        self.poll_in_flight = False
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
        self._rearm_after(message.elapsed_s)

    def _rearm_after(self, elapsed: float) -> None:
        if not self.paused:
            self._arm(self.interval - elapsed)

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
        for notice in snap.notices:
            if notice not in self._seen_notices:
                self._seen_notices.add(notice)
                self.notify(notice, timeout=8, markup=False)
        if not self._cards_requested and self.card_lookup is not None and snap.devices:
            self._cards_requested = True
            self._match_cards(snap)

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
        self.dashboard.update_snapshot(snap, self._recent)

    def _recent(self, device_index: int, metric: str) -> list[float]:
        """The newest points of a series, as many as a sparkline on this screen can draw."""
        return self.history.last(device_index, metric, max(1, self.size.width))

    def dashboard_resumed(self) -> None:
        if self._dashboard_stale and self.latest_snapshot is not None:
            self._render_dashboard(self.latest_snapshot)

    @work(thread=True, exit_on_error=False, group="cards", description="card labels")
    def _match_cards(self, snap: Snapshot) -> None:
        lookup = self.card_lookup
        if lookup is None:
            return
        try:
            labels = lookup([d.info for d in snap.devices])
        except Exception:  # no catalog labels is a cosmetic loss, not an error
            labels = {}
        self.post_message(CardsMatched(labels))

    def on_cards_matched(self, message: CardsMatched) -> None:
        self.cards_matched = True
        if self._shutting_down():
            return
        self.dashboard.set_card_labels(message.labels)
        if self.latest_snapshot is not None:
            self.dashboard.update_snapshot(self.latest_snapshot, self._recent)

    def _show_header(self) -> None:
        self._header_drawn_at = time.monotonic()
        snap = self.latest_snapshot
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
            )
        )

    # -- actions ----------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return not (action == "kill" and self.readonly)

    async def action_quit(self) -> None:
        self.remember_settings()
        self.exit(0)

    def remember_settings(self) -> None:
        """The dashboard's settings as they are now, read while its widgets still exist."""
        from gputui.tui.settings_apply import current_settings

        with contextlib.suppress(Exception):  # a screen tearing down: keep what was read
            self.exit_settings = current_settings(self, self.settings or Settings())

    def action_toggle_pause(self) -> None:
        self.paused = not self.paused
        if self.paused:
            if self._poll_timer is not None:
                self._poll_timer.stop()
                self._poll_timer = None
        elif not self.poll_in_flight:
            self._start_poll()
        self._show_header()

    def _set_interval(self, interval: float) -> None:
        self.interval = interval
        if self._poll_timer is not None:  # waiting for the next poll: re-arm at the new pace
            self._arm(interval)
        self._show_header()

    def action_faster(self) -> None:
        smaller = [i for i in INTERVALS if i < self.interval]
        self._set_interval(smaller[-1] if smaller else self.interval)

    def action_slower(self) -> None:
        larger = [i for i in INTERVALS if i > self.interval]
        self._set_interval(larger[0] if larger else self.interval)

    def action_cycle_sort(self) -> None:
        self.dashboard.query_one(ProcessTable).cycle_sort()

    def action_reverse_sort(self) -> None:
        table = self.dashboard.query_one(ProcessTable)
        table.set_sort(table.sort_column, not table.sort_reverse)

    def action_filter(self) -> None:
        if self.screen is self.dashboard:
            self.dashboard.open_filter()

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            keys = [k for k in self.HELP_KEYS if not (self.readonly and k[0] in ("k", "space"))]
            self.push_screen(HelpScreen(keys))

    def action_kill(self) -> None:
        if self.readonly or self.screen is not self.dashboard:
            return
        table = self.dashboard.query_one(ProcessTable)
        procs = table.tagged_processes
        if not procs:
            proc = table.selected
            procs = [proc] if proc is not None else []
        if not procs:
            self.notify("select a process first", severity="warning")
            return
        snap = self.latest_snapshot
        allowed, refusals = self.kill_policy.check_all(
            procs,
            simulated=snap is None or snap.simulated,
            listed_at=snap.timestamp if snap is not None else None,
        )
        if not allowed:
            self.notify(
                "\n".join(refusals) or "cannot signal this process",
                title="kill refused",
                severity="error",
                timeout=6,
                markup=False,
            )
            return
        idents = [ident for _, ident in allowed]

        def done(sig: int | None) -> None:
            if sig is None:
                return
            # Re-checked at the moment of signalling, one process at a time: the dialog
            # may have stayed open while one exited and its PID went to someone else.
            results = self.kill_policy.kill_all(idents, sig)
            table.clear_tags()
            self.notify(
                "\n".join(message for _, message in results),
                severity="information" if all(sent for sent, _ in results) else "error",
                timeout=5,
                markup=False,
            )

        self.push_screen(KillScreen([p for p, _ in allowed], refusals), done)

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        """Enter or a click on a process row: its full details."""
        if self.screen is not self.dashboard:
            return
        self._open_details(
            self.dashboard.query_one(ProcessTable).processes.get(str(event.row_key.value))
        )

    def action_process_details(self) -> None:
        if self.screen is self.dashboard:
            self._open_details(self.dashboard.query_one(ProcessTable).selected)

    def _open_details(self, proc: GpuProcess | None) -> None:
        if proc is not None:
            snap = self.latest_snapshot
            real = snap is not None and not snap.simulated
            self.push_screen(
                ProcessScreen(
                    proc,
                    self.why_not_visible,
                    listed_at=snap.timestamp if snap is not None else None,
                    history=self.process_history.series,
                    extras=self.process_extras if real else None,
                    devices=snap.devices if snap is not None else (),
                )
            )

    def on_gpu_panel_selected(self, event: GpuPanel.Selected) -> None:
        """Enter or a click on a GPU panel: all its facts and MIG devices (device_screen.py)."""
        snap = self.latest_snapshot
        dev = next((d for d in snap.devices if d.index == event.index), None) if snap else None
        if snap is not None and dev is not None and self.screen is self.dashboard:
            self.push_screen(DeviceScreen(dev, snap.processes))

    def why_not_visible(self, proc: GpuProcess) -> str:
        """Why a listed process has no host details: exited, another namespace, no permission."""
        snap = self.latest_snapshot
        if snap is None or snap.simulated:
            return NOT_VISIBLE  # demo data says so itself; its PIDs are made up
        if CONTAINER_NOTICE in snap.notices:
            return NOT_VISIBLE + " (gputui runs in a container)"
        return host_why_not_visible(proc.pid)

    def action_catalog(self) -> None:
        screen_class = _optional_screen("gputui.tui.screens.catalog", "CatalogScreen")
        if screen_class is None:
            self.notify("the catalog screen is not available yet", severity="warning")
            return
        snap = self.latest_snapshot
        # The GPU chosen on the dashboard (focused panel, else the selected process's GPU)
        # is the one compared with; the devices tell the screen which are lost.
        panel = self.focused if isinstance(self.focused, GpuPanel) else None
        proc = self.dashboard.query_one(ProcessTable).selected
        gpu = panel.index if panel else proc.gpu_index if proc else None
        self.push_screen(screen_class(snap.devices if snap else [], gpu=gpu))

    def action_fit(self) -> None:
        screen_class = _optional_screen("gputui.tui.screens.fit", "FitScreen")
        if screen_class is None:
            self.notify("the fit screen is not available yet", severity="warning")
            return
        # As the Catalog: the focused GPU panel, else the selected process's GPU (and its MIG
        # instance) is the one the Fit screen shows first.
        panel = self.focused if isinstance(self.focused, GpuPanel) else None
        proc = self.dashboard.query_one(ProcessTable).selected
        gpu = panel.index if panel else proc.gpu_index if proc else None
        instance = proc.gpu_instance_id if proc and not panel else None
        screen = screen_class(self.models_path, gpu=gpu, gpu_instance=instance)
        self.push_screen(screen)
        update = getattr(screen, "update_snapshot", None)
        if self.latest_snapshot is not None and callable(update):
            update(self.latest_snapshot)

    def action_history(self) -> None:
        if self.screen is not self.dashboard:
            return
        from gputui.tui.screens.history import HistoryScreen

        proc = self.dashboard.query_one(ProcessTable).selected
        self.push_screen(
            HistoryScreen(self.history, self.latest_snapshot, proc.gpu_index if proc else None)
        )

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        from gputui.tui.palette import dashboard_commands

        yield from super().get_system_commands(screen)
        yield from dashboard_commands(self)


def _optional_screen(module: str, name: str) -> Any:
    """Screens other parts of gputui add later; None while they are missing or broken."""
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError):
        return None


def _terminal_gone() -> bool:
    """True once the controlling terminal hung up (SSH dropped without a SIGHUP reaching us).

    Textual's input thread treats EOF on stdin as "no data" and would select() in a
    tight loop; checking for POLLHUP on each poll lets the app exit instead of
    spinning at 100 % CPU.
    """
    stream = sys.__stdin__
    if stream is None:
        return True
    try:
        fd = stream.fileno()
        poller = select.poll()
        poller.register(fd, select.POLLHUP | select.POLLERR | select.POLLNVAL)
        events = poller.poll(0)
    except (OSError, ValueError):
        return True
    return any(mask & (select.POLLHUP | select.POLLERR | select.POLLNVAL) for _, mask in events)


def tty_alive() -> bool:
    try:
        return os.isatty(sys.__stdin__.fileno()) if sys.__stdin__ else False
    except (OSError, ValueError):
        return False
