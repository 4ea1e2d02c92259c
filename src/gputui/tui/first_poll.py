"""The dashboard's first poll, started before Textual is imported.

The first full frame needs one poll. Started on a daemon thread as soon as the
source is open (commands/tui.py), the poll's NVML calls and /proc reads overlap
the import of Textual and the dashboard, and the dashboard can compose its GPU
panels with the screen (their number is known) and fill them before its first
paint, instead of painting an empty screen, polling, mounting the panels (a
restyle and a layout pass) and painting again. Imports nothing of Textual: it
runs before Textual is loaded.
"""

from __future__ import annotations

import threading
import time

from gputui.model.snapshot import Snapshot
from gputui.sources.base import Source

# How long composing the dashboard waits for the first poll to end. A slower poll (a
# driver taking its time) is shown when it ends, as any later poll is.
COMPOSE_WAIT_S = 0.5


class FirstPoll:
    """One `source.poll()` on its own daemon thread; its result, error and duration."""

    def __init__(self, source: Source) -> None:
        self._done = threading.Event()
        self.result: Snapshot | None = None
        self.error: Exception | None = None
        self.elapsed_s = 0.0
        self._source = source
        threading.Thread(target=self._run, daemon=True, name="gputui-first-poll").start()

    def _run(self) -> None:
        started = time.perf_counter()
        try:
            self.result = self._source.poll()
        except Exception as exc:  # shown by the app as any poll's failure
            self.error = exc
        finally:
            self.elapsed_s = time.perf_counter() - started
            self._done.set()

    def wait(self, timeout: float | None = None) -> bool:
        """True once the poll has ended (with a result or an error)."""
        return self._done.wait(timeout)

    @property
    def done(self) -> bool:
        return self._done.is_set()
