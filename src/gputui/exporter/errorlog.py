"""The exporter's own log: one short line per event, a bounded number per minute, never a traceback.

Any client can make a request fail (a hostile header, a method wsgiref does
not know, a library bug reached through an odd Accept value). A traceback per
such request would let anyone who can connect fill the journal on demand, and
a failing write to stderr (`2>/dev/full`, a closed pipe) must not end the
server. So every message the request path writes comes here: made visible
(no control character reaches a terminal or a log viewer), cut to one short
line, at most `burst` lines per `window_s`, and the lines held back are
counted in the next one that is written.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from typing import TextIO

from gputui.core.textsafe import visible

#: Longest line written: room for the reason and a short quote of what the client sent.
MAX_LINE = 200
BURST = 10
WINDOW_S = 60.0


def _stderr() -> TextIO | None:
    return sys.stderr


def short(text: object, limit: int = 60) -> str:
    """`text` made visible, on one line, cut to `limit` characters (for quoting a client)."""
    flat = visible(str(text)).replace("\n", "\\n")
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


class LineLog:
    """Rate-limited one-line messages to a stream that may fail."""

    def __init__(
        self,
        stream: Callable[[], TextIO | None] = _stderr,
        *,
        clock: Callable[[], float] = time.monotonic,
        burst: int = BURST,
        window_s: float = WINDOW_S,
    ) -> None:
        self._stream, self._clock = stream, clock
        self._burst, self._window = burst, window_s
        self._lock = threading.Lock()
        self._window_start = -float("inf")
        self._written = 0
        self._held = 0

    def line(self, message: str) -> bool:
        """Write `message` as one line unless the limit is reached; True when written."""
        with self._lock:
            now = self._clock()
            if now - self._window_start >= self._window:
                self._window_start, self._written = now, 0
            if self._written >= self._burst:
                self._held += 1
                return False
            self._written += 1
            held, self._held = self._held, 0
        text = short(message, MAX_LINE)
        if held:
            text += f" ({held} similar lines held back)"
        self._write(f"gputui exporter: {text}\n")
        return True

    def _write(self, text: str) -> None:
        stream = self._stream()
        if stream is None:
            return
        try:
            stream.write(text)
            stream.flush()
        except (OSError, ValueError):  # a full or closed stderr: the line is lost, not the server
            pass


#: The process's log for the request path (tests build their own with a fake clock).
LOG = LineLog()
