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

import pytest

pytestmark = pytest.mark.slow

ALT_SCREEN_OFF = b"\x1b[?1049l"


def _spawn() -> tuple[int, int]:
    pid, fd = pty.fork()
    if pid == 0:  # child: becomes session leader with the pty as controlling terminal
        os.environ.update(TERM="xterm-256color", COLUMNS="120", LINES="40")
        os.execv(sys.executable, [sys.executable, "-m", "gputui", "--demo"])
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


def _wait(pid: int, timeout: float) -> int | None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return status
        time.sleep(0.05)
    return None


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
