"""Who may signal which GPU process, and making sure the signal reaches that process.

Kept apart from the dialog so the rules can be tested without Textual, and so
"am I root / who am I / who is that PID / how is a signal sent" can be
injected: the tests run as root, and the refusal paths must still be exercised.

Identity. A PID names a process only while it lives: between the poll that
listed it, the `k` press and the confirmation, the process may exit and the
number may go to someone else's new process. So the process is identified by
(PID, start time, real uid) from psutil when the dialog opens (and checked
against the start time the listing implied), and again at the moment of
signalling. Where the platform has pidfds (`os.pidfd_open`, Linux 5.3+), the
pidfd is opened *before* that second check and the signal goes through it: a
pidfd always refers to the process it was opened on, so a reuse after the
check cannot redirect the signal. Elsewhere `os.kill` follows the check, with
only the microseconds between the two left open.

Ownership comes from the real uid (`os.getuid()`) and the password database,
never from `$USER`/`$LOGNAME` (which `getpass.getuser()` reads first and which
anyone can set).
"""

from __future__ import annotations

import contextlib
import os
import pwd
import signal
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from gputui.core.textsafe import visible
from gputui.model.snapshot import GpuProcess

# psutil's create time has clock-tick resolution and the listing's running time was taken
# a moment before the snapshot's timestamp; a reused PID starts later than that by far.
START_TOLERANCE_S = 2.0


@dataclass(frozen=True, slots=True)
class Identity:
    """What makes a PID one particular process: its number, start time and real owner."""

    pid: int
    create_time: float
    uid: int


def read_identity(pid: int) -> Identity | None:
    """The live process behind `pid`, or None when there is none (or it is a zombie).

    psutil is imported here, when a kill dialog opens: the dashboard imports this
    module at start and otherwise needs no psutil on Linux (its polls read /proc)."""
    import psutil

    try:
        proc = psutil.Process(pid)
        with proc.oneshot():
            if proc.status() == psutil.STATUS_ZOMBIE:
                return None
            return Identity(pid, proc.create_time(), proc.uids().real)
    except (psutil.Error, OSError, ValueError):
        return None


def user_name(uid: int) -> str:
    """The password database's name for `uid`, or the number where it has none (containers)."""
    try:
        return visible(pwd.getpwuid(uid).pw_name)
    except (KeyError, OSError):
        return str(uid)


def _is_root() -> bool:
    return os.geteuid() == 0


def pidfds_available() -> bool:
    return hasattr(os, "pidfd_open") and hasattr(signal, "pidfd_send_signal")


@dataclass
class KillPolicy:
    is_root: Callable[[], bool] = field(default=_is_root)
    current_uid: Callable[[], int] = field(default=os.getuid)
    name_of: Callable[[int], str] = field(default=user_name)
    identify: Callable[[int], Identity | None] = field(default=read_identity)
    # None: through a pidfd where the platform has them, else os.kill. Tests inject a recorder.
    send_signal: Callable[[int, int], None] | None = None
    # Simulated processes carry made-up PIDs that may name a real, unrelated process
    # here: they are never signalled, unless a screenshot or test says otherwise.
    allow_simulated: bool = False

    def check(
        self, proc: GpuProcess, *, simulated: bool = False, listed_at: float | None = None
    ) -> tuple[Identity | None, str | None]:
        """(the process to signal, None), or (None, why it may not be signalled from here).

        `listed_at` is the timestamp of the snapshot that listed `proc`: with its
        running time it says when the listed process started, so a PID that was
        reused between the poll and the key press is caught here already.
        """
        pid = proc.pid
        if simulated and not self.allow_simulated:
            return None, (
                f"PID {pid} is a simulated process (demo data); "
                "no signal is sent to whatever real process has that number"
            )
        # Existence first: a process that exited while NVML still lists it has no host
        # details either, and "another PID namespace" would send the user looking there.
        ident = self.identify(pid)
        if ident is None:
            return None, f"PID {pid} has already exited; nothing to signal"
        if not proc.host_visible:
            return None, (
                f"PID {pid} is not visible from this PID namespace; "
                "signalling that number here could hit a different process"
            )
        if listed_at is not None and proc.running_s is not None:
            listed_start = listed_at - proc.running_s
            if abs(ident.create_time - listed_start) > START_TOLERANCE_S:
                return None, (
                    f"PID {pid} is now a different process than the one listed "
                    "(it started later); nothing sent"
                )
        if not self.is_root():
            me = self.current_uid()
            if ident.uid != me:
                return None, (
                    f"PID {pid} belongs to {self.name_of(ident.uid)}, not {self.name_of(me)}; "
                    "only root may signal it"
                )
        return ident, None

    def kill(self, ident: Identity, sig: int) -> tuple[bool, str]:
        """Send `sig` to exactly the process `ident` names; (sent, one line for the user).

        Never raises for the usual failures; refuses when the PID is no longer
        that process (exited, reused, or changed owner).
        """
        name = signal.Signals(sig).name
        pid = ident.pid
        pidfd: int | None = None
        try:
            if self.send_signal is None and pidfds_available():
                pidfd = os.pidfd_open(pid)  # pins the process the check below looks at
            now = self.identify(pid)
            if now is None:
                return False, f"PID {pid} had already exited; nothing sent"
            if now != ident:
                return False, (
                    f"PID {pid} is no longer the process you confirmed "
                    "(it exited and the number was reused, or its owner changed); "
                    f"{name} not sent"
                )
            if pidfd is not None:
                signal.pidfd_send_signal(pidfd, sig)
            else:
                (self.send_signal or os.kill)(pid, sig)
        except ProcessLookupError:
            return False, f"PID {pid} had already exited; nothing sent"
        except PermissionError:
            return False, f"permission denied sending {name} to PID {pid}"
        except OSError as exc:
            return False, f"could not signal PID {pid}: {exc.strerror or exc}"
        finally:
            if pidfd is not None:
                with contextlib.suppress(OSError):
                    os.close(pidfd)
        return True, f"sent {name} to PID {pid}"

    def check_all(
        self,
        procs: Sequence[GpuProcess],
        *,
        simulated: bool = False,
        listed_at: float | None = None,
    ) -> tuple[list[tuple[GpuProcess, Identity]], list[str]]:
        """`check` for each tagged process: ([(process, identity) to signal], [refusals]).

        A process on several GPUs is listed once per GPU but signalled once.
        """
        allowed: list[tuple[GpuProcess, Identity]] = []
        refusals: list[str] = []
        seen: set[int] = set()
        for proc in procs:
            if proc.pid in seen:
                continue
            seen.add(proc.pid)
            ident, refusal = self.check(proc, simulated=simulated, listed_at=listed_at)
            if ident is None:
                refusals.append(refusal or f"PID {proc.pid} cannot be signalled")
            else:
                allowed.append((proc, ident))
        return allowed, refusals

    def kill_all(self, idents: Sequence[Identity], sig: int) -> list[tuple[bool, str]]:
        """`kill` for each confirmed process, each identity re-checked at its own signal."""
        return [self.kill(ident, sig) for ident in idents]
