"""Running an app in a real terminal: signals, hang-ups and a clean exit.

Both apps, the dashboard (`run_dashboard`) and the cluster view (cluster_app.py), run
through `run_in_terminal` and end with `leave`, so each gets all of the below.

- SIGTERM and SIGHUP (tmux kill-session, a dropped SSH connection) call
  `app.hang_up`: Textual exits and restores the terminal instead of dying
  mid-frame, with a watchdog in case its shutdown blocks on a dead terminal.
- SIGINT (`kill -INT`; ctrl+c itself is a key in raw mode) and SIGQUIT do
  the same, exiting 130 and 131 as shells expect of a process those signals
  ended, instead of freezing mid-frame or dying with the terminal still in
  the alternate screen, mouse reporting on and the cursor hidden.
- Thread workers run on daemon threads: a poll stuck inside a driver call
  must not keep the process alive after the user quit.
- Textual draws on stderr. With stderr redirected (`gputui 2> log`) it would
  draw into the file and leave the terminal blank, so while the UI runs fd 2
  is the terminal that stdout is on; the redirection is put back on exit, so
  what gputui writes after the UI (errors) still lands in the file.
- Once start-up is over, the objects it made (Textual's DOM and styles, the
  modules, the catalog, the fit line's first pass) are frozen out of the
  garbage collector (`freeze_startup_heap`): they live as long as the
  dashboard, yet every full collection walked all of them again.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import queue
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, NoReturn, Protocol, TypeVar

from gputui.sources.base import Source
from gputui.tui.first_poll import FirstPoll
from gputui.tui.settings import Settings

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (see sources/base.py)
if TYPE_CHECKING:
    from gputui.alerts.rules import Rule

T = TypeVar("T")

# After SIGTERM/SIGHUP or a hang-up, the process ends within this many seconds even
# if Textual's shutdown blocks on a terminal that is gone.
EXIT_WATCHDOG_S = 3.0

# Seconds after start when start-up's objects are frozen out of the collector: past the
# first frame and the fit line's first pass (it starts after the first frame, ~0.1 s).
GC_FREEZE_AFTER_S = 10.0


# Signal -> exit status. 128 + n for the signals that mean "stop now" from a user.
EXIT_SIGNALS: dict[signal.Signals, int] = {
    signal.SIGTERM: 0,
    signal.SIGHUP: 0,
    signal.SIGINT: 128 + signal.SIGINT,
    signal.SIGQUIT: 128 + signal.SIGQUIT,
}


@contextlib.contextmanager
def ui_on_terminal() -> Iterator[None]:
    """While the UI runs, fd 2 is the terminal when only stderr was redirected away from it."""
    try:
        redirected = not os.isatty(2) and os.isatty(1)
    except OSError:
        redirected = False
    if not redirected:
        yield
        return
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.flush()
    saved = os.dup(2)
    os.dup2(1, 2)
    try:
        yield
    finally:
        with contextlib.suppress(OSError, ValueError):
            sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)


class DaemonThreadExecutor(ThreadPoolExecutor):
    """Jobs on daemon threads, kept for the next job once idle, never joined.

    A thread per job (the first version) cost a thread start every poll: the UI thread
    waits in `Thread.start` until the new thread runs, ~3 % of its CPU at 1 s. An idle
    thread takes the next job instead; a job finding none idle (a poll stuck in a driver
    call, a fit pass running) gets a new thread, so a stuck job never holds up the others.
    At most as many threads as jobs ever ran at once (the poll, the fit line, card labels).
    Subclasses ThreadPoolExecutor only because asyncio insists on that type.
    """

    def __init__(self) -> None:
        super().__init__()
        self._jobs: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        self._idle = 0
        self._idle_lock = threading.Lock()

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        future: Future[T] = Future()

        def job() -> None:
            result: Any = None
            error: BaseException | None = None
            running = future.set_running_or_notify_cancel()
            if running:
                try:
                    result = fn(*args, **kwargs)
                except BaseException as exc:
                    error = exc
            # Idle before the result is out: a job submitted on seeing the result finds
            # this thread (it takes that job once done here) instead of starting another.
            with self._idle_lock:
                self._idle += 1
            if running:
                if error is None:
                    future.set_result(result)
                else:
                    future.set_exception(error)

        self._jobs.put(job)
        with self._idle_lock:
            # An idle thread counted here is in, or on its way to, `_jobs.get()`.
            start = self._idle == 0
            if not start:
                self._idle -= 1
        if start:
            threading.Thread(target=self._serve, daemon=True, name="gputui-worker").start()
        return future

    def _serve(self) -> None:
        while True:
            self._jobs.get()()


def freeze_startup_heap() -> None:
    """Collect start-up's garbage, then move every object still alive to the permanent
    generation (`gc.freeze`), which the collector no longer walks.

    Measured on the 8-GPU scenario (gc.callbacks, 30 s at 1 s): the collector cost
    ~113 ms of CPU before, ~45 ms after, the same collections made (one full one fewer
    in the window); resident memory within 0.5 MiB. Objects frozen here are still freed
    by reference counting when they die; only a cycle among them would stay (start-up's
    cycles are collected first, by the gc.collect() here).
    """
    gc.collect()
    gc.freeze()


class TerminalApp(Protocol):
    """What `run_in_terminal` runs: a Textual App with `HangUp` (terminal.py) mixed in."""

    def hang_up(self, return_code: int = 0) -> None: ...

    def run(self, *, loop: asyncio.AbstractEventLoop | None = None) -> Any: ...


def run_in_terminal(app: TerminalApp) -> int:
    """Run `app` until it exits: its workers on daemon threads, SIGTERM, SIGHUP, SIGINT and
    SIGQUIT ending it through `hang_up` (with its exit watchdog), the UI drawn on the
    terminal even with stderr redirected, start-up's heap frozen once it is over."""
    loop = asyncio.new_event_loop()
    loop.set_default_executor(DaemonThreadExecutor())
    for sig, code in EXIT_SIGNALS.items():
        loop.add_signal_handler(sig, app.hang_up, code)
    loop.call_later(GC_FREEZE_AFTER_S, freeze_startup_heap)
    try:
        with ui_on_terminal():
            result = app.run(loop=loop)
    finally:
        for sig in EXIT_SIGNALS:
            loop.remove_signal_handler(sig)
        loop.close()
    return int(result or 0)


def leave(code: int) -> NoReturn:
    """End the process once the UI is gone and the terminal restored.

    Without interpreter finalization: a daemon thread still in a poll (a driver call, an
    HTTP request) or a fit estimate can hold stdout's or stderr's lock then, and CPython
    aborts ("could not acquire lock ... at interpreter shutdown", SIGABRT), seen on 3.10
    on a loaded machine.
    """
    with contextlib.suppress(OSError, ValueError):
        sys.stdout.flush()
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.flush()
    os._exit(code)


def _save_settings(start: Settings, end: Settings, path: Path) -> None:
    """What the user changed in the dashboard, set in the file in place (settings.py)."""
    from gputui.tui.settings import changes, save_settings

    warning = save_settings(path, changes(start, end))
    if warning is not None:
        with contextlib.suppress(OSError, ValueError):
            print(f"gputui: warning: {warning}", file=sys.stderr)


def run_dashboard(
    source: Source,
    *,
    fallback_reason: str | None,
    interval: float,
    readonly: bool,
    models_path: Path | None = None,
    settings: Settings | None = None,
    settings_path: Path | None = None,
    first_poll: FirstPoll | None = None,
    alert_rules: tuple[Rule, ...] | None = None,
) -> int:
    """`settings_path`: the settings file, edited at exit where the user changed a setting
    (None: not written); `first_poll`: the first poll, started before Textual was imported.

    The dashboard only reads the catalog: a cache miss is validated by a child
    process, so pydantic never loads into this long-lived one (catalog/loader.py).
    """
    from gputui.tui.app import GpuTuiApp

    app = GpuTuiApp(
        source,
        fallback_reason=fallback_reason,
        interval=interval,
        readonly=readonly,
        models_path=models_path,
        settings=settings,
        watch_terminal=True,
        exit_watchdog_s=EXIT_WATCHDOG_S,
        first_poll=first_poll,
        catalog_in_child=True,
        alert_rules=alert_rules,
    )
    try:
        code = run_in_terminal(app)
    finally:
        if not app.poll_in_flight:
            with contextlib.suppress(Exception):
                source.close()
    if settings_path is not None:
        start, end = app.start_settings, app.exit_settings
        if start is not None and end is not None:
            _save_settings(start, end, settings_path)
    leave(code)
