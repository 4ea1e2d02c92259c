"""The real `gputui --demo` in a pseudo-terminal: it draws, and it leaves cleanly.

Covers what Pilot cannot: signals (SIGTERM, SIGHUP from a closed terminal, as
when an SSH connection drops) and restoring the terminal (leaving the
alternate screen).
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
from pty_driving import ALT_SCREEN_OFF, CURSOR_SHOWN, MOUSE_OFF, read_until, spawn, wait_exit

pytestmark = pytest.mark.slow


# The dashboard with every fit estimate stuck (what a huge or hostile models file did).
STUCK_ESTIMATES = """
import sys, time
import gputui.tui.views.fit_pass as fit_pass
def stuck(*args, **kwargs):
    time.sleep(3600)
fit_pass.check = stuck
from gputui.cli import main
sys.exit(main(["--demo"]))
"""


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_signal_exits_cleanly_and_restores_the_terminal(sig: signal.Signals) -> None:
    pid, fd = spawn()
    status: int | None = None
    try:
        assert b"UTIL" in read_until(fd, b"UTIL", 30), "no frame drawn"
        os.kill(pid, sig)
        tail = read_until(fd, ALT_SCREEN_OFF, 10)
        status = wait_exit(pid, 10)
        assert status is not None, "still running 10 s after the signal"
        assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
        assert ALT_SCREEN_OFF in tail
    finally:
        if status is None:
            os.kill(pid, signal.SIGKILL)
            wait_exit(pid, 5)
        os.close(fd)


def test_closed_terminal_ends_the_process() -> None:
    """Closing the pty master is what sshd does when the connection drops."""
    pid, fd = spawn()
    try:
        assert b"UTIL" in read_until(fd, b"UTIL", 30)
    finally:
        os.close(fd)
    status = wait_exit(pid, 10)
    if status is None:
        os.kill(pid, signal.SIGKILL)
        wait_exit(pid, 5)
    assert status is not None, "gputui kept running after its terminal went away"


@pytest.mark.parametrize("how", ["SIGTERM", "SIGHUP", "q"])
def test_quitting_is_prompt_while_a_fit_estimate_runs(how: str) -> None:
    pid, fd = spawn(code=STUCK_ESTIMATES)
    status: int | None = None
    try:
        assert b"UTIL" in read_until(fd, b"UTIL", 30), "no frame drawn"
        os.write(fd, b"f")
        assert b"Estimating" in read_until(fd, b"Estimating", 15), "the Fit screen did not draw"
        if how == "q":
            os.write(fd, b"q")
        else:
            os.kill(pid, getattr(signal, how))
        tail = read_until(fd, ALT_SCREEN_OFF, 10)
        status = wait_exit(pid, 10)
        assert status is not None, f"still running 10 s after {how} with an estimate running"
        assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
        assert ALT_SCREEN_OFF in tail
    finally:
        if status is None:
            os.kill(pid, signal.SIGKILL)
            wait_exit(pid, 5)
        os.close(fd)


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGQUIT, 131)])
def test_interrupt_and_quit_signals_restore_the_terminal(sig: signal.Signals, code: int) -> None:
    """`kill -INT` froze the screen, `kill -QUIT` died in the alternate screen with the mouse on."""
    pid, fd = spawn()
    status: int | None = None
    try:
        assert b"UTIL" in read_until(fd, b"UTIL", 30), "no frame drawn"
        os.kill(pid, sig)
        tail = read_until(fd, CURSOR_SHOWN, 10)
        tail += read_until(fd, b"\x00never", 0.5)  # the rest of the restore sequence
        status = wait_exit(pid, 10)
        assert status is not None, f"still running 10 s after {sig.name}"
        assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == code
        for restore in (ALT_SCREEN_OFF, MOUSE_OFF, CURSOR_SHOWN):
            assert restore in tail, restore
    finally:
        if status is None:
            os.kill(pid, signal.SIGKILL)
            wait_exit(pid, 5)
        os.close(fd)


def test_dashboard_draws_on_the_terminal_when_stderr_is_redirected(tmp_path: Path) -> None:
    """`gputui --demo 2> log` drew the whole UI into the log and left the terminal blank."""
    log = tmp_path / "log"
    pid, fd = spawn(stderr_to=str(log))
    status: int | None = None
    try:
        assert b"UTIL" in read_until(fd, b"UTIL", 30), "nothing drawn on the terminal"
        os.write(fd, b"q")
        tail = read_until(fd, ALT_SCREEN_OFF, 10)
        status = wait_exit(pid, 10)
        assert status is not None and os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
        assert ALT_SCREEN_OFF in tail
        assert b"UTIL" not in log.read_bytes() and b"\x1b[?1049h" not in log.read_bytes()
    finally:
        if status is None:
            os.kill(pid, signal.SIGKILL)
            wait_exit(pid, 5)
        os.close(fd)
