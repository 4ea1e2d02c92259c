"""A real, busy child process for the host-side tests (psutil and /proc read it)."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

import psutil


@contextmanager
def busy_child(marker: str) -> Iterator[subprocess.Popen[bytes]]:
    """A Python child spinning on the CPU, its command line ending in `marker`."""
    proc = subprocess.Popen(
        [sys.executable, "-c", "import time\nwhile True: sum(range(10000))", marker]
    )
    # A GPU process has long since exec'd; a child this fresh may not have yet.
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            if psutil.Process(proc.pid).cmdline()[-1:] == [marker]:
                break
        except (psutil.Error, IndexError):
            pass
        time.sleep(0.01)
    try:
        yield proc
    finally:
        proc.kill()
        proc.wait()
