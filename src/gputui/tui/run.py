"""Running the dashboard in a real terminal: signals, hang-ups and a clean exit.

- SIGTERM and SIGHUP (tmux kill-session, a dropped SSH connection) call
  `app.hang_up`: Textual exits and restores the terminal instead of dying
  mid-frame, with a watchdog in case its shutdown blocks on a dead terminal.
- Thread workers run on daemon threads: a poll stuck inside a driver call
  must not keep the process alive after the user quit.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

from gputui.telemetry.source import Source

T = TypeVar("T")

# After SIGTERM/SIGHUP or a hang-up, the process ends within this many seconds even
# if Textual's shutdown blocks on a terminal that is gone.
EXIT_WATCHDOG_S = 3.0


class DaemonThreadExecutor(ThreadPoolExecutor):
    """One daemon thread per job; polls are at most one at a time, so no pool is needed.

    Subclasses ThreadPoolExecutor only because asyncio insists on that type.
    """

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        future: Future[T] = Future()

        def runner() -> None:
            if not future.set_running_or_notify_cancel():
                return
            try:
                future.set_result(fn(*args, **kwargs))
            except BaseException as exc:
                future.set_exception(exc)

        threading.Thread(target=runner, daemon=True, name="gputui-worker").start()
        return future


def run_dashboard(
    source: Source,
    *,
    fallback_reason: str | None,
    interval: float,
    readonly: bool,
) -> int:
    from gputui.tui.app import GpuTuiApp

    app = GpuTuiApp(
        source,
        fallback_reason=fallback_reason,
        interval=interval,
        readonly=readonly,
        watch_terminal=True,
        exit_watchdog_s=EXIT_WATCHDOG_S,
    )
    loop = asyncio.new_event_loop()
    loop.set_default_executor(DaemonThreadExecutor())
    for sig in (signal.SIGTERM, signal.SIGHUP):
        loop.add_signal_handler(sig, app.hang_up)
    try:
        result = app.run(loop=loop)
    finally:
        for sig in (signal.SIGTERM, signal.SIGHUP):
            loop.remove_signal_handler(sig)
        loop.close()
        if not app.poll_in_flight:
            with contextlib.suppress(Exception):
                source.close()
    return int(result or 0)
