"""The controlling terminal as the dashboard sees it: hung up or not, and a sure exit.

Textual's input thread treats EOF on stdin as "no data" and would select() in a
tight loop after an SSH connection dropped without a SIGHUP reaching us;
`terminal_gone` lets the app exit instead of spinning at 100 % CPU. Textual's
shutdown joins its output thread, and with the terminal gone that join can
block for good (seen after the pty master closed): `exit_watchdog` ends the
process a few seconds later whatever Textual is doing.
"""

from __future__ import annotations

import os
import select
import sys
import threading

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
