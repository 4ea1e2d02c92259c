"""Standard error that is closed or full: messages never land on stdout, the exporter runs on.

With fd 2 closed at start Python sets `sys.stderr` to None, and
`print(..., file=sys.stderr)` then prints to stdout: an error message mixed
into the output a script reads. With stderr on a full disk, the first message
raised OSError: the exporter exited 1 before serving.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow


def _closed_stderr(args: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["sh", "-c", '"$0" "$@" 2>&-', sys.executable, "-m", "gputui", *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize(
    "args",
    [
        ["snapshot", "--scenario", "no-such-scenario.toml"],
        ["fit", "no-such-models.toml"],
        ["exporter", "--listen", "nowhere"],
        ["exporter", "--interval", "0"],
        ["--demo", "--models", "no-such-models.toml"],
    ],
    ids=" ".join,
)
def test_with_stderr_closed_an_error_is_the_exit_status_alone(args: list[str]) -> None:
    done = _closed_stderr(args)
    assert (done.returncode, done.stdout) == (2, "")


def test_with_stderr_closed_a_file_opened_later_is_not_fd_2(tmp_path: Path) -> None:
    """fd 2 is held by /dev/null: a library writing to fd 2 cannot reach a file gputui opens."""
    probe = (
        "import os, sys; from gputui.core.outstream import install_stderr; install_stderr(); "
        f"fd = os.open({str(tmp_path / 'f')!r}, os.O_WRONLY | os.O_CREAT); print(fd)"
    )
    done = subprocess.run(
        ["sh", "-c", '"$0" "$@" 2>&-', sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0 and int(done.stdout) > 2


def test_the_exporter_serves_with_stderr_on_a_full_disk() -> None:
    """Still running after its start-up messages failed to write; ended by SIGTERM, exit 0."""
    with open("/dev/full", "w") as full:
        proc = subprocess.Popen(
            [sys.executable, "-m", "gputui", "exporter", "--source", "auto", "--listen",
             "127.0.0.1:0", "--interval", "1"],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=full,
        )  # fmt: skip
    try:
        with pytest.raises(subprocess.TimeoutExpired):
            proc.wait(timeout=5)  # it would have exited 1 within a second
    finally:
        proc.terminate()
        code = proc.wait(timeout=10)
    assert code == 0
    assert proc.stdout is not None and proc.stdout.read() == b""


def test_a_full_stderr_keeps_the_exit_status_of_the_error() -> None:
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [sys.executable, "-m", "gputui", "exporter", "--listen", "nowhere"],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=full, timeout=60,
        )  # fmt: skip
    assert (done.returncode, done.stdout) == (2, b"")


def test_install_leaves_a_replaced_stderr_alone(capsys: pytest.CaptureFixture[str]) -> None:
    from gputui.core.outstream import install_stderr

    before = sys.stderr
    assert install_stderr() is False and sys.stderr is before
