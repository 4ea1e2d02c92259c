"""Who may signal which GPU process.

Kept apart from the dialog so the rules can be tested without Textual, and so
"am I root / who am I / how is a signal sent" can be injected: the tests run as
root, and the refusal path must still be exercised.
"""

from __future__ import annotations

import getpass
import os
import signal
from collections.abc import Callable
from dataclasses import dataclass, field

from gputui.telemetry.snapshot import GpuProcess


def _is_root() -> bool:
    return os.geteuid() == 0


def _current_user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no passwd entry for the uid (containers)
        return str(os.geteuid())


@dataclass
class KillPolicy:
    is_root: Callable[[], bool] = field(default=_is_root)
    current_user: Callable[[], str] = field(default=_current_user)
    send_signal: Callable[[int, int], None] = field(default=os.kill)
    # Simulated processes carry made-up PIDs that may name a real, unrelated process
    # here: they are never signalled, unless a screenshot or test says otherwise.
    allow_simulated: bool = False

    def refusal(self, proc: GpuProcess, *, simulated: bool = False) -> str | None:
        """Why `proc` may not be signalled from here, or None when it may."""
        if simulated and not self.allow_simulated:
            return (
                f"PID {proc.pid} is a simulated process (demo data); "
                "no signal is sent to whatever real process has that number"
            )
        if not proc.host_visible:
            return (
                f"PID {proc.pid} is not visible from this PID namespace; "
                "signalling that number here could hit a different process"
            )
        if self.is_root():
            return None
        me = self.current_user()
        if proc.user is None:
            return f"cannot tell who owns PID {proc.pid}; only root may signal it"
        if proc.user != me:
            return f"PID {proc.pid} belongs to {proc.user}, not {me}; only root may signal it"
        return None

    def kill(self, proc: GpuProcess, sig: int) -> tuple[bool, str]:
        """Send `sig`; return (sent, one line for the user). Never raises for the usual failures."""
        name = signal.Signals(sig).name
        try:
            self.send_signal(proc.pid, sig)
        except ProcessLookupError:
            return False, f"PID {proc.pid} had already exited"
        except PermissionError:
            return False, f"permission denied sending {name} to PID {proc.pid}"
        except OSError as exc:
            return False, f"could not signal PID {proc.pid}: {exc.strerror or exc}"
        return True, f"sent {name} to PID {proc.pid}"
