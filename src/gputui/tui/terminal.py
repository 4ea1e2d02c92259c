"""The controlling terminal as both apps see it: hung up or not, and a sure exit.

Textual's input thread treats EOF on stdin as "no data" and would select() in a
tight loop after an SSH connection dropped without a SIGHUP reaching us;
`terminal_gone` lets the app exit instead of spinning at 100 % CPU. Textual's
shutdown joins its output thread, and with the terminal gone that join can
block for good (seen after the pty master closed): `exit_watchdog` ends the
process a few seconds later whatever Textual is doing. `HangUp` is how the dashboard
and the cluster view both end for a signal or a terminal that went away.
"""

from __future__ import annotations

import os
import select
import sys
import threading
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from textual.app import App

_HUNG_UP = select.POLLHUP | select.POLLERR | select.POLLNVAL


def terminal_gone() -> bool:
    """True once the controlling terminal hung up (POLLHUP, an error, or no stdin at all)."""
    stream = sys.__stdin__
    if stream is None:
        return True
    try:
        fd = stream.fileno()
        poller = select.poll()
        poller.register(fd, _HUNG_UP)
        events = poller.poll(0)
    except (OSError, ValueError):
        return True
    return any(mask & _HUNG_UP for _, mask in events)


def tty_alive() -> bool:
    try:
        return os.isatty(sys.__stdin__.fileno()) if sys.__stdin__ else False
    except (OSError, ValueError):
        return False


def exit_watchdog(seconds: float, return_code: int) -> None:
    """End the process `seconds` from now with `return_code`, on a daemon timer thread."""
    watchdog = threading.Timer(seconds, os._exit, args=(return_code,))
    watchdog.daemon = True
    watchdog.start()


class HangUp:
    """Exit for a signal or a vanished terminal, and make sure the process does end.

    Mixed into an App (before it). With `exit_watchdog_s` set, the process ends that many
    seconds after `hang_up` whatever Textual's shutdown is doing; with `watch_terminal`,
    `_terminal_still_there` (the poller's `before_poll`) hangs up instead of polling once
    the terminal is gone.
    """

    watch_terminal: bool = False
    exit_watchdog_s: float | None = None

    def _before_hang_up(self) -> None:
        """What the app keeps before it goes (the dashboard: its settings)."""

    def hang_up(self, return_code: int = 0) -> None:
        self._before_hang_up()
        cast("App[Any]", self).exit(return_code)
        if self.exit_watchdog_s is not None:
            exit_watchdog(self.exit_watchdog_s, return_code)

    def _terminal_still_there(self) -> bool:
        """Before each poll: a terminal that hung up ends the app instead."""
        if self.watch_terminal and terminal_gone():
            self.hang_up()
            return False
        return True
