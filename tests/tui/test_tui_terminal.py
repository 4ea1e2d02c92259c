"""The real `gputui --demo` in a pseudo-terminal: it draws, and it leaves cleanly.

Covers what Pilot cannot: signals (SIGTERM, SIGHUP from a closed terminal, as
when an SSH connection drops) and restoring the terminal (leaving the
alternate screen).
"""

from __future__ import annotations

import os
import pty
import select
import signal
import sys
import time
from pathlib import Path

import pytest

from tests.waiting import poll_until

pytestmark = pytest.mark.slow

ALT_SCREEN_OFF = b"\x1b[?1049l"
MOUSE_OFF = b"\x1b[?1000l"
CURSOR_SHOWN = b"\x1b[?25h"


# The dashboard with every fit estimate stuck (what a huge or hostile models file did).
STUCK_ESTIMATES = """
import sys, time
import gputui.tui.views.fit_pass as fit_pass
def stuck(model, target):
    time.sleep(3600)
fit_pass.check = stuck
from gputui.cli import main
sys.exit(main(["--demo"]))
"""


def _spawn(code: str | None = None, stderr_to: str | None = None) -> tuple[int, int]:
    pid, fd = pty.fork()
    if pid == 0:  # child: becomes session leader with the pty as controlling terminal
        os.environ.update(TERM="xterm-256color", COLUMNS="120", LINES="40")
        if stderr_to is not None:
            log = os.open(stderr_to, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.dup2(log, 2)
        if code is None:
            os.execv(sys.executable, [sys.executable, "-m", "gputui", "--demo"])
        os.execv(sys.executable, [sys.executable, "-c", code])
    return pid, fd


def _read_until(fd: int, needle: bytes, timeout: float) -> bytes:
    out = b""
    deadline = time.monotonic() + timeout
    while needle not in out and time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.1)
        if ready:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                break
            if not chunk:
                break
            out += chunk
    return out


def _exit_status(pid: int) -> int | None:
    done, status = os.waitpid(pid, os.WNOHANG)
    return status if done else None


def _wait(pid: int, timeout: float) -> int | None:
    """The child's wait status once it has exited, None if still running after `timeout`."""
    return poll_until(lambda: _exit_status(pid), timeout)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_signal_exits_cleanly_and_restores_the_terminal(sig: signal.Signals) -> None:
    pid, fd = _spawn()
    status: int | None = None
    try:
        assert b"UTIL" in _read_until(fd, b"UTIL", 30), "no frame drawn"
        os.kill(pid, sig)
        tail = _read_until(fd, ALT_SCREEN_OFF, 10)
        status = _wait(pid, 10)
        assert status is not None, "still running 10 s after the signal"
        assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
        assert ALT_SCREEN_OFF in tail
    finally:
        if status is None:
            os.kill(pid, signal.SIGKILL)
            _wait(pid, 5)
        os.close(fd)


def test_closed_terminal_ends_the_process() -> None:
    """Closing the pty master is what sshd does when the connection drops."""
    pid, fd = _spawn()
    try:
        assert b"UTIL" in _read_until(fd, b"UTIL", 30)
    finally:
        os.close(fd)
    status = _wait(pid, 10)
    if status is None:
        os.kill(pid, signal.SIGKILL)
        _wait(pid, 5)
    assert status is not None, "gputui kept running after its terminal went away"


@pytest.mark.parametrize("how", ["SIGTERM", "SIGHUP", "q"])
def test_quitting_is_prompt_while_a_fit_estimate_runs(how: str) -> None:
    pid, fd = _spawn(STUCK_ESTIMATES)
    status: int | None = None
    try:
        assert b"UTIL" in _read_until(fd, b"UTIL", 30), "no frame drawn"
        os.write(fd, b"f")
        assert b"Estimating" in _read_until(fd, b"Estimating", 15), "the Fit screen did not draw"
        if how == "q":
            os.write(fd, b"q")
        else:
            os.kill(pid, getattr(signal, how))
        tail = _read_until(fd, ALT_SCREEN_OFF, 10)
        status = _wait(pid, 10)
        assert status is not None, f"still running 10 s after {how} with an estimate running"
        assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
        assert ALT_SCREEN_OFF in tail
    finally:
        if status is None:
            os.kill(pid, signal.SIGKILL)
            _wait(pid, 5)
        os.close(fd)


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGQUIT, 131)])
def test_interrupt_and_quit_signals_restore_the_terminal(sig: signal.Signals, code: int) -> None:
    """`kill -INT` froze the screen, `kill -QUIT` died in the alternate screen with the mouse on."""
    pid, fd = _spawn()
    status: int | None = None
    try:
        assert b"UTIL" in _read_until(fd, b"UTIL", 30), "no frame drawn"
        os.kill(pid, sig)
        tail = _read_until(fd, CURSOR_SHOWN, 10)
        tail += _read_until(fd, b"\x00never", 0.5)  # the rest of the restore sequence
        status = _wait(pid, 10)
        assert status is not None, f"still running 10 s after {sig.name}"
        assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == code
        for restore in (ALT_SCREEN_OFF, MOUSE_OFF, CURSOR_SHOWN):
            assert restore in tail, restore
    finally:
        if status is None:
            os.kill(pid, signal.SIGKILL)
            _wait(pid, 5)
        os.close(fd)


def test_dashboard_draws_on_the_terminal_when_stderr_is_redirected(tmp_path: Path) -> None:
    """`gputui --demo 2> log` drew the whole UI into the log and left the terminal blank."""
    log = tmp_path / "log"
    pid, fd = _spawn(stderr_to=str(log))
    status: int | None = None
    try:
        assert b"UTIL" in _read_until(fd, b"UTIL", 30), "nothing drawn on the terminal"
        os.write(fd, b"q")
        tail = _read_until(fd, ALT_SCREEN_OFF, 10)
        status = _wait(pid, 10)
        assert status is not None and os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
        assert ALT_SCREEN_OFF in tail
        assert b"UTIL" not in log.read_bytes() and b"\x1b[?1049h" not in log.read_bytes()
    finally:
        if status is None:
            os.kill(pid, signal.SIGKILL)
            _wait(pid, 5)
        os.close(fd)
