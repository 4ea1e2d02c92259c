"""The one poll loop of both apps (the dashboard and the cluster view).

One thread worker per poll, and the next poll is armed with `set_timer` only
when the app has handled the previous one, so a slow or hanging source delays
data but never piles up threads or blocks input. The worker posts what it read
(`Polled`) or why it could not (`PollFailed`, an exception turned into one
line) to the app, which renders it on the UI thread and then says when the
next poll is due (`next_in`): the dashboard after its interval, the cluster
view after a back-off while Prometheus does not answer. A source's exception
never ends the app: it is caught in the worker, and the worker itself runs
with `exit_on_error=False`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import KW_ONLY, dataclass, field
from typing import Any, Generic, TypeVar

from textual.app import App
from textual.message import Message
from textual.timer import Timer

T = TypeVar("T")


def describe_error(exc: Exception) -> str:
    """`Type: text`, or the type alone when the exception says nothing."""
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


class Polled(Message, Generic[T]):
    """A poll's result, posted by the worker thread to the app."""

    def __init__(self, result: T, elapsed_s: float) -> None:
        super().__init__()
        self.result = result
        self.elapsed_s = elapsed_s


class PollFailed(Message):
    """A poll that raised: the error as one line, posted by the worker thread to the app."""

    def __init__(self, error: str, elapsed_s: float) -> None:
        super().__init__()
        self.error = error
        self.elapsed_s = elapsed_s


@dataclass(eq=False)
class Poller(Generic[T]):
    """Calls `fetch` off the UI thread, one call at a time, and posts the outcome to `app`.

    `fetch` runs on a worker thread; `describe` turns its exception into the
    line shown (it must not raise). `before_poll`, on the UI thread, may veto
    a poll (the dashboard exits instead when its terminal hung up).
    """

    app: App[Any] = field(repr=False)
    fetch: Callable[[], T] = field(repr=False)
    _: KW_ONLY
    interval: float
    name: str
    describe: Callable[[Exception], str] = field(default=describe_error, repr=False)
    before_poll: Callable[[], bool] | None = field(default=None, repr=False)
    paused: bool = field(default=False, init=False)
    in_flight: bool = field(default=False, init=False)
    _timer: Timer | None = field(default=None, init=False, repr=False)

    @property
    def waiting(self) -> bool:
        """A next poll is armed (not paused, none running)."""
        return self._timer is not None

    def arm(self, delay: float) -> None:
        """Poll once `delay` seconds from now (replacing a poll already armed)."""
        if self._timer is not None:
            self._timer.stop()
        # Textual's Timer divides by its delay: never arm with 0 (a poll slower than the interval).
        self._timer = self.app.set_timer(max(0.01, delay), self.poll_now, name=self.name)

    def poll_now(self) -> None:
        """Start a poll now, unless paused or one is running."""
        self._timer = None
        if self.paused or self.in_flight:
            return
        if self.before_poll is not None and not self.before_poll():
            return
        self.in_flight = True
        self.app.run_worker(
            self._work, name=self.name, group=self.name, thread=True, exit_on_error=False
        )

    def _work(self) -> None:
        started = time.perf_counter()
        try:
            result = self.fetch()
        except Exception as exc:  # any source failure is shown, never fatal
            self.app.post_message(PollFailed(self.describe(exc), time.perf_counter() - started))
        else:
            self.app.post_message(Polled(result, time.perf_counter() - started))

    def done(self) -> None:
        """The app received the outcome: a next poll may start."""
        self.in_flight = False

    def next_in(self, delay: float) -> None:
        """Arm the next poll after a handled outcome, unless paused."""
        if not self.paused:
            self.arm(delay)

    def toggle_pause(self) -> None:
        """Pause (dropping an armed poll) or resume (polling at once when none runs)."""
        self.paused = not self.paused
        if self.paused:
            if self._timer is not None:
                self._timer.stop()
                self._timer = None
        elif not self.in_flight:
            self.poll_now()

    def set_interval(self, interval: float) -> None:
        """A new pace; a poll already armed is re-armed at it."""
        self.interval = interval
        if self._timer is not None:
            self.arm(interval)


class PolledApp:
    """The pace keys and poll state both apps share; an app mixes it in before App.

    The app sets `poller` and `INTERVALS` (the paces + and - step through) and
    says in `_pace_changed` what it redraws when the pace or pause changes.
    """

    poller: Poller[Any]
    INTERVALS: tuple[float, ...]

    @property
    def interval(self) -> float:
        return self.poller.interval

    @property
    def paused(self) -> bool:
        return self.poller.paused

    @property
    def poll_in_flight(self) -> bool:
        return self.poller.in_flight

    def _pace_changed(self) -> None:
        raise NotImplementedError

    def action_toggle_pause(self) -> None:
        self.poller.toggle_pause()
        self._pace_changed()

    def _set_interval(self, interval: float) -> None:
        self.poller.set_interval(interval)  # waiting for the next poll: re-armed at the new pace
        self._pace_changed()

    def action_faster(self) -> None:
        smaller = [i for i in self.INTERVALS if i < self.interval]
        self._set_interval(smaller[-1] if smaller else self.interval)

    def action_slower(self) -> None:
        larger = [i for i in self.INTERVALS if i > self.interval]
        self._set_interval(larger[0] if larger else self.interval)
