"""`gputui --prometheus URL`: the cluster view, an App of its own.

Polling is the dashboard's Poller (poller.py: one thread worker per refresh,
the next one armed only when it finished), with two differences that come from
the network: a failed refresh keeps the last data on screen, greyed, under a
banner with the reason, and the retries back off (interval, 2x, 4x ... up to
30 s) until Prometheus answers again. Sparkline history comes from one range
query for the whole fleet every HISTORY_EVERY_S, not from local sampling,
so the lines are full as soon as the view opens.

At fleet scale (cluster_fetch.py, sources/prometheus/view.py) a refresh reads
the host table aggregated by Prometheus and the GPUs and history of the hosts
on screen only, so its cost follows the screen, not the fleet. The default
refresh follows the fleet's scrape interval (never faster than new data
comes); an explicit --interval or the + and - keys set it instead.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from textual.app import App
from textual.binding import Binding

from gputui.sources.prometheus.api import PrometheusError
from gputui.sources.prometheus.source import Backoff, PrometheusSource
from gputui.sources.prometheus.view import ViewData
from gputui.tui.cluster_fetch import reader_for
from gputui.tui.poller import Polled, PolledApp, Poller, PollFailed
from gputui.tui.screens.cluster import CSS_PATH, ClusterScreen, HostScreen
from gputui.tui.terminal import HangUp
from gputui.tui.views.cluster_rows import SPARK_WIDTH, History

HISTORY_METRIC = "DCGM_FI_DEV_GPU_UTIL"
HISTORY_WINDOW_S = 600.0
HISTORY_EVERY_S = 15.0
RETRY_CAP_S = 30.0


# The fleet, the history of the hosts asked for when due, those hosts, the HTTP requests made.
Fetched = tuple[ViewData, History | None, frozenset[str], int]


def _cluster_error(exc: Exception) -> str:
    if isinstance(exc, PrometheusError):
        return exc.reason
    return f"{type(exc).__name__}: {exc}"  # anything else is shown too, never fatal


def _wall_clock() -> str:
    return time.strftime("%H:%M:%S")


class ClusterApp(PolledApp, HangUp, App[int]):
    TITLE = "gputui cluster"
    CSS_PATH = CSS_PATH
    BINDINGS = [
        Binding("q", "quit", "Quit"),
        Binding("ctrl+c", "quit", "Quit", show=False, priority=True),
        Binding("p", "toggle_pause", "Pause"),
        Binding("plus,equals_sign", "faster", "Faster", key_display="+"),
        Binding("minus", "slower", "Slower", key_display="-"),
        Binding("question_mark", "help", "Help", key_display="?"),
    ]
    HELP_KEYS = [
        ("q, ctrl+c", "quit"),
        ("p", "pause / resume refreshing"),
        ("+ / -", "refresh faster / slower"),
        ("s / r", "cycle the sort column of the focused table / reverse it"),
        ("/", "filter hosts and GPUs by text (escape clears)"),
        ("tab", "move between the host and GPU tables"),
        ("enter", "the selected host's GPUs and processes (escape: back)"),
        ("?", "this help"),
    ]
    INTERVALS = (1.0, 2.0, 5.0, 10.0, 30.0, 60.0)

    def __init__(
        self,
        source: PrometheusSource,
        *,
        interval: float = 2.0,
        follow_scrape: bool = False,
        clock: Callable[[], str] | None = None,
        history_every_s: float = HISTORY_EVERY_S,
        monotonic: Callable[[], float] = time.monotonic,
        watch_terminal: bool = False,
        exit_watchdog_s: float | None = None,
    ) -> None:
        """`follow_scrape`: `interval` is the default, raised to the fleet's scrape interval;
        `watch_terminal`, `exit_watchdog_s`: as the dashboard's (terminal.HangUp)."""
        super().__init__()
        self.source = source
        self.reader = reader_for(source)
        self.watch_terminal = watch_terminal
        self.exit_watchdog_s = exit_watchdog_s
        self.poller: Poller[Fetched] = Poller(
            self,
            self._fetch,
            interval=interval,
            name="cluster-poll",
            describe=_cluster_error,
            before_poll=self._terminal_still_there,
        )
        self.clock = clock or _wall_clock
        self.monotonic = monotonic  # what the host ages count with (frozen in screenshots)
        self.history_every_s = history_every_s
        self.follow_scrape = follow_scrape
        self.base_interval = interval
        self.main = ClusterScreen(source.url)
        self.view: ViewData | None = None
        self.history: History = {}
        self._history_at: float | None = None
        self._history_hosts: frozenset[str] = frozenset()
        self.wanted: frozenset[str] = frozenset()  # hosts on screen: their GPUs are read
        self.backoff = Backoff(interval, RETRY_CAP_S)
        self.last_error: str | None = None
        self.last_ok: str | None = None
        self.refreshes = 0
        self.requests: list[int] = []  # HTTP requests per refresh, history included (tests)

    def get_default_screen(self) -> ClusterScreen:
        return self.main

    def on_mount(self) -> None:
        self.poller.poll_now()

    # --- polling ------------------------------------------------------------------
    def _fetch(self) -> Fetched:
        """On the poll's worker thread: the fleet, and the history of the hosts on screen
        every history_every_s (at once for hosts that came on screen since)."""
        wanted = self.wanted
        before = self.reader.requests
        self.reader.ask(wanted)
        due = (
            self._history_at is None or time.monotonic() - self._history_at >= self.history_every_s
        )
        view = self.reader.poll(first=max(1, self.size.height))
        if not wanted:  # the first screenful, which the reader picked
            wanted = frozenset(h.name for h in view.detail.hosts)
        history = None
        if due or not wanted <= self._history_hosts:
            history = self.reader.history(HISTORY_METRIC, HISTORY_WINDOW_S, SPARK_WIDTH * 5)
        return view, history, wanted, self.reader.requests - before

    def want_hosts(self, names: frozenset[str]) -> None:
        """The hosts on screen changed (scrolled, filtered): read their GPUs soon."""
        if names == self.wanted:
            return
        self.wanted = names
        shown = self.view.detail.hosts if self.view is not None else ()
        if not names <= {h.name for h in shown} and self.poller.waiting:
            self.poller.arm(0.2)  # a short delay: scrolling through many rows polls once

    def _closing_down(self) -> bool:
        # is_attached: False once exit() was called; is_running: False once shutdown began.
        return not self.is_running or not self.main.is_attached

    def on_polled(self, message: Polled[Fetched]) -> None:
        self.poller.done()
        if self._closing_down():
            return
        view, history, asked, requests = message.result
        self.view = view
        if history is not None:
            self.history = history
            self._history_at = time.monotonic()
            self._history_hosts = asked
        self.refreshes += 1
        self.requests.append(requests)
        self.last_ok = self.clock()
        recovered = self.last_error is not None
        self.last_error = None
        self.backoff.success()
        if self.follow_scrape and view.scrape_interval is not None:
            pace = min(max(self.base_interval, view.scrape_interval), self.INTERVALS[-1])
            if pace != self.interval:
                self.backoff = Backoff(pace, RETRY_CAP_S)
                self.poller.interval = pace
        self.main.show(view, self.history)
        self.main.show_banner(None)
        top = self.screen
        if isinstance(top, HostScreen):
            top.set_reachable(True)
            top.update_cluster(view.detail, self.history)
        self._show_info()
        if recovered:
            self.notify("Prometheus answers again", timeout=3)
        self.poller.next_in(self.interval - message.elapsed_s)

    def on_poll_failed(self, message: PollFailed) -> None:
        self.poller.done()
        if self._closing_down():
            return
        self.last_error = message.error
        delay = self.backoff.failure()
        kept = f"showing data from {self.last_ok}" if self.last_ok else "no data yet"
        self.main.show_banner(
            f"Prometheus unreachable: {message.error} ({kept}; retrying in {delay:.0f} s)"
        )
        if isinstance(self.screen, HostScreen):
            self.screen.set_reachable(False)
        self._show_info()
        self.poller.next_in(delay)

    def _show_info(self) -> None:
        v = self.view
        # The URL last: at 80 columns the counts, states and times stay, the URL is cut.
        parts = ["gputui cluster"]
        if v is not None:
            states = [h.state for h in v.hosts]
            parts.append(f"{len(v.hosts)} hosts, {sum(h.gpus for h in v.hosts)} GPUs")
            down = states.count("down")
            stale = states.count("stale")
            if down or stale:
                parts.append(f"{down} down, {stale} stale")
        parts.append(f"updated {self.last_ok or 'never'}")
        parts.append(
            f"every {self.interval:g} s" + (" (scrape interval)" if self._scrape_paced() else "")
        )
        if self.paused:
            parts.append("PAUSED")
        parts.append(self.source.url)
        from gputui.core.textsafe import markup_safe

        self.main.show_info(markup_safe("  ".join(parts)))

    # --- actions ------------------------------------------------------------------
    async def action_quit(self) -> None:
        self.exit(0)

    def _pace_changed(self) -> None:
        self._show_info()

    def _scrape_paced(self) -> bool:
        return self.follow_scrape and self.interval != self.base_interval

    def _set_interval(self, interval: float) -> None:
        self.follow_scrape = False  # the user's pace from now on
        self.backoff = Backoff(interval, RETRY_CAP_S)
        super()._set_interval(interval)

    def action_help(self) -> None:
        from gputui.tui.screens.help import HelpScreen

        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(self.HELP_KEYS))


def interval_given(words: list[str]) -> bool:
    """Whether the command line sets --interval (or an abbreviation argparse takes for it)."""
    return any(
        len(option) >= 3 and "--interval".startswith(option)
        for option in (w.partition("=")[0] for w in words if w.startswith("--"))
    )


def run_cluster(args: Any, interval: float) -> int:
    """`gputui --prometheus URL [--match SELECTOR]`: checks first, then the view."""
    import sys

    from gputui.core.errors import UserError
    from gputui.sources.prometheus.connect import check_cluster_args, open_cluster_source
    from gputui.sources.prometheus.series import VIEW_METRICS

    check_cluster_args(args, {"demo": "--demo", "scenario": "--scenario", "source": "--source"})
    source = open_cluster_source(args.prometheus, getattr(args, "match", None), VIEW_METRICS)
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise UserError(
            "the cluster view needs a terminal on stdin and stdout; for a one-shot listing use "
            "`gputui snapshot --prometheus URL`"
        )
    from gputui.tui.run import EXIT_WATCHDOG_S, leave, run_in_terminal

    app = ClusterApp(
        source,
        interval=interval,
        follow_scrape=not interval_given(sys.argv[1:]),
        watch_terminal=True,
        exit_watchdog_s=EXIT_WATCHDOG_S,
    )
    leave(run_in_terminal(app))  # the dashboard's terminal handling (tui/run.py)
