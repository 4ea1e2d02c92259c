"""The real `gputui --prometheus URL` in a pseudo-terminal: the cluster view handles the
terminal as the dashboard does (tests/tui/test_tui_terminal.py), through the same code.

It drew the whole UI into the log with `2> log` and left the terminal blank, froze on
`kill -INT` and died in the alternate screen on `kill -QUIT`: run_cluster had neither
the dashboard's ui_on_terminal(), its SIGINT/SIGQUIT handling nor its exit watchdog.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from pty_driving import (
    ALT_SCREEN_OFF,
    ALT_SCREEN_ON,
    CURSOR_SHOWN,
    MOUSE_OFF,
    read_until,
    running,
    spawn,
    wait_exit,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fuzz"))
import prometheus_fake as fake  # noqa: E402

pytestmark = pytest.mark.slow

DRAWN = b"gputui cluster"  # the info line: the view was drawn


@pytest.fixture
def prometheus() -> Iterator[str]:
    server = fake.FakePrometheus()
    try:
        yield server.url
    finally:
        server.stop()


def test_the_cluster_view_draws_on_the_terminal_when_stderr_is_redirected(
    prometheus: str, tmp_path: Path
) -> None:
    log = tmp_path / "log"
    with running(["--prometheus", prometheus], stderr_to=str(log)) as (pid, fd):
        assert DRAWN in read_until(fd, DRAWN, 30), "nothing drawn on the terminal"
        os.write(fd, b"q")
        tail = read_until(fd, ALT_SCREEN_OFF, 10)
        status = wait_exit(pid, 10)
        assert status is not None and os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
        assert ALT_SCREEN_OFF in tail
    drawn_into_log = log.read_bytes()
    assert DRAWN not in drawn_into_log and ALT_SCREEN_ON not in drawn_into_log


@pytest.mark.parametrize(
    ("sig", "code"),
    [(signal.SIGINT, 130), (signal.SIGQUIT, 131), (signal.SIGTERM, 0), (signal.SIGHUP, 0)],
)
def test_signals_end_the_cluster_view_and_restore_the_terminal(
    prometheus: str, sig: signal.Signals, code: int
) -> None:
    with running(["--prometheus", prometheus]) as (pid, fd):
        assert DRAWN in read_until(fd, DRAWN, 30), "no frame drawn"
        os.kill(pid, sig)
        tail = read_until(fd, CURSOR_SHOWN, 10)
        tail += read_until(fd, b"\x00never", 0.5)  # the rest of the restore sequence
        status = wait_exit(pid, 10)
        assert status is not None, f"still running 10 s after {sig.name}"
        assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == code
        for restore in (ALT_SCREEN_OFF, MOUSE_OFF, CURSOR_SHOWN):
            assert restore in tail, restore


def test_a_closed_terminal_ends_the_cluster_view(prometheus: str) -> None:
    """Closing the pty master is what sshd does when the connection drops."""
    pid, fd = spawn(["--prometheus", prometheus, "--interval", "1"])
    try:
        assert DRAWN in read_until(fd, DRAWN, 30)
    finally:
        os.close(fd)
    status = wait_exit(pid, 10)
    if status is None:
        os.kill(pid, signal.SIGKILL)
        wait_exit(pid, 5)
    assert status is not None, "gputui kept running after its terminal went away"
