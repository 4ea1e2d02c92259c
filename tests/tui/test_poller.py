"""The one poll loop (tui/poller.py) the dashboard and the cluster view share: results
come off the UI thread one at a time, a failing source is a line and never the app's end,
pausing stops it, and an outcome that arrives while the app exits draws nothing."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from textual.app import App
from textual.pilot import Pilot

from gputui.tui.app import GpuTuiApp
from gputui.tui.cluster_app import ClusterApp
from gputui.tui.poller import Polled, Poller, PollFailed


async def _until(pilot: Pilot[Any], cond: Callable[[], bool], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        await pilot.pause(0.02)


class Counting:
    """A source: returns 1, 2, 3...; raises while `fail` is set; counts overlapping calls."""

    def __init__(self, delay: float = 0.0) -> None:
        self.delay = delay
        self.calls = 0
        self.running = 0
        self.most_at_once = 0
        self.fail: Exception | None = None
        self.threads: set[int] = set()
        self._lock = threading.Lock()

    def __call__(self) -> int:
        with self._lock:
            self.calls += 1
            self.running += 1
            self.most_at_once = max(self.most_at_once, self.running)
            call = self.calls
        self.threads.add(threading.get_ident())
        try:
            time.sleep(self.delay)
            if self.fail is not None:
                raise self.fail
            return call
        finally:
            with self._lock:
                self.running -= 1


class PollingApp(App[None]):
    def __init__(self, fetch: Counting, interval: float = 0.02) -> None:
        super().__init__()
        self.poller: Poller[int] = Poller(self, fetch, interval=interval, name="test-poll")
        self.results: list[int] = []
        self.errors: list[str] = []

    def on_mount(self) -> None:
        self.poller.poll_now()

    def on_polled(self, message: Polled[int]) -> None:
        self.poller.done()
        self.results.append(message.result)
        self.poller.next_in(self.poller.interval - message.elapsed_s)

    def on_poll_failed(self, message: PollFailed) -> None:
        self.poller.done()
        self.errors.append(message.error)
        self.poller.next_in(self.poller.interval)


async def test_results_come_from_a_worker_thread_one_poll_at_a_time() -> None:
    fetch = Counting(delay=0.03)  # slower than the interval: polls must not pile up
    app = PollingApp(fetch, interval=0.01)
    async with app.run_test() as pilot:
        await _until(pilot, lambda: len(app.results) >= 5)
        assert threading.get_ident() not in fetch.threads
    assert fetch.most_at_once == 1
    assert app.results[:5] == [1, 2, 3, 4, 5]


async def test_a_failing_source_is_one_line_and_polling_goes_on() -> None:
    fetch = Counting()
    fetch.fail = RuntimeError("driver fell over")
    app = PollingApp(fetch)
    async with app.run_test() as pilot:
        await _until(pilot, lambda: len(app.errors) >= 2)
        assert app.errors[0] == "RuntimeError: driver fell over"
        assert app.is_running
        fetch.fail = None
        await _until(pilot, lambda: len(app.results) >= 1)
        assert app.is_running


async def test_an_exception_without_text_is_named_by_its_type() -> None:
    fetch = Counting()
    fetch.fail = ValueError()
    app = PollingApp(fetch)
    async with app.run_test() as pilot:
        await _until(pilot, lambda: bool(app.errors))
        assert app.errors[0] == "ValueError"


async def test_paused_nothing_is_fetched_and_resuming_polls_at_once() -> None:
    fetch = Counting()
    app = PollingApp(fetch, interval=3600.0)
    async with app.run_test() as pilot:
        await _until(pilot, lambda: len(app.results) == 1)
        app.poller.toggle_pause()
        assert not app.poller.waiting  # the armed poll was dropped
        app.poller.arm(0.01)
        await pilot.pause(0.2)
        assert fetch.calls == 1  # armed, but paused: no call
        app.poller.toggle_pause()
        await _until(pilot, lambda: len(app.results) == 2)


async def test_before_poll_may_refuse_a_poll() -> None:
    fetch = Counting()
    app = PollingApp(fetch)
    app.poller.before_poll = lambda: False
    async with app.run_test() as pilot:
        await pilot.pause(0.2)
        assert fetch.calls == 0 and not app.poller.in_flight


class FakePrometheus:
    url = "http://prometheus:9090"


def test_the_dashboard_and_the_cluster_view_share_the_poller(scripted_source: Any) -> None:
    dashboard = GpuTuiApp(scripted_source, card_lookup=None, interval=2.0)
    cluster = ClusterApp(FakePrometheus(), interval=5.0)  # type: ignore[arg-type]
    assert isinstance(dashboard.poller, Poller) and isinstance(cluster.poller, Poller)
    assert (dashboard.interval, cluster.interval) == (2.0, 5.0)


async def test_a_poll_that_lands_while_the_dashboard_exits_draws_nothing(
    scripted_source: Any,
) -> None:
    app = GpuTuiApp(scripted_source, card_lookup=None, interval=3600.0)
    async with app.run_test(size=(120, 40)) as pilot:
        await _until(pilot, lambda: app.poll_count == 1)
        assert not app._shutting_down()
        shown = app.latest_snapshot
        assert shown is not None
        app.exit()
        assert app._shutting_down()  # exit() asked: public is_attached says so
        app.poller.in_flight = True  # a poll whose outcome is still on its way
        app.post_message(Polled(shown, 0.0))
    assert not app.poller.in_flight  # the outcome was received...
    assert app.poll_count == 1  # ...and nothing drawn
