"""A scenario or catalog TOML that is a FIFO or device is refused before it is opened.

Opening a FIFO for reading blocks until a writer comes: `--scenario` pointed at one
would hang the command. The check runs in a child process with a timeout, so a
regression fails instead of hanging the suite.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")


def _snapshot(scenario: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gputui", "snapshot", "--scenario", str(scenario)],
        capture_output=True,
        text=True,
        timeout=30,
        env={**os.environ, "GPUTUI_CACHE_DIR": ""},
    )


def test_fifo_scenario_is_refused_in_one_line(tmp_path: Path) -> None:
    fifo = tmp_path / "scenario.toml"
    os.mkfifo(fifo)
    done = _snapshot(fifo)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "FIFO" in lines[0] and str(fifo) in lines[0]
    assert "Traceback" not in done.stderr


def test_device_scenario_is_refused(tmp_path: Path) -> None:
    done = _snapshot(Path("/dev/zero"))
    assert done.returncode == 2
    assert "not a regular file" in done.stderr and done.stderr.count("\n") == 1


def test_missing_and_folder_keep_their_messages(tmp_path: Path) -> None:
    assert "scenario file not found" in _snapshot(tmp_path / "nope.toml").stderr
    assert "is a directory, not a scenario file" in _snapshot(tmp_path).stderr
