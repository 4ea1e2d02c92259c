"""Running the real `gputui` in a pseudo-terminal, as a user's terminal would: shared by the
terminal tests of both apps (the dashboard and the cluster view) and the settings-file tests."""

from __future__ import annotations

import os
import pty
import select
import signal
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from tests.waiting import poll_until

ALT_SCREEN_ON = b"\x1b[?1049h"
ALT_SCREEN_OFF = b"\x1b[?1049l"
MOUSE_OFF = b"\x1b[?1000l"
CURSOR_SHOWN = b"\x1b[?25h"


def spawn(
    argv: list[str] | None = None,
    *,
    code: str | None = None,
    stderr_to: str | None = None,
    env: Mapping[str, str] | None = None,
) -> tuple[int, int]:
    """`python -m gputui ARGV` (default `--demo`), or `python -c CODE`, on a new pty:
    (its pid, the pty master)."""
    pid, fd = pty.fork()
    if pid == 0:  # child: becomes session leader with the pty as controlling terminal
        os.environ.update(TERM="xterm-256color", COLUMNS="120", LINES="40")
        os.environ.update(env or {})
        if stderr_to is not None:
            log = os.open(stderr_to, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.dup2(log, 2)
        if code is None:
            words = ["--demo"] if argv is None else argv
            os.execv(sys.executable, [sys.executable, "-m", "gputui", *words])
        os.execv(sys.executable, [sys.executable, "-c", code])
    return pid, fd


def read_until(fd: int, needle: bytes, timeout: float) -> bytes:
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
    try:
        done, status = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:  # already waited for
        return 0
    return status if done else None


def wait_exit(pid: int, timeout: float) -> int | None:
    """The child's wait status once it has exited, None if still running after `timeout`."""
    return poll_until(lambda: _exit_status(pid), timeout)


@contextmanager
def running(
    argv: list[str] | None = None,
    *,
    code: str | None = None,
    stderr_to: str | None = None,
    env: Mapping[str, str] | None = None,
) -> Iterator[tuple[int, int]]:
    """`spawn`, then on the way out: killed if still running, the pty closed."""
    pid, fd = spawn(argv, code=code, stderr_to=stderr_to, env=env)
    try:
        yield pid, fd
    finally:
        if _exit_status(pid) is None:
            os.kill(pid, signal.SIGKILL)
            wait_exit(pid, 5)
        os.close(fd)
