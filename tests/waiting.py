"""Waiting for a condition, shared by every test that polls (apps, processes, servers).

Import it as `from tests.waiting import wait_for` (pytest's importlib mode makes
`tests` a namespace package; benchmarks/cluster.py puts the repository root on
sys.path for the same import).

A wait ends when the condition holds, or once BOTH the timeout has passed and
the condition was tried `timeout / step` times: on a loaded machine a pause
overruns, and counting tries as well as seconds means no wait ends sooner
than either way of counting would end it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

DEFAULT_TIMEOUT_S = 60.0


class _Budget:
    def __init__(self, timeout: float, step: float) -> None:
        self.deadline = time.monotonic() + timeout
        self.tries_left = int(timeout / step) if step > 0 else 0

    def spent(self) -> bool:
        self.tries_left -= 1
        return self.tries_left < 0 and time.monotonic() >= self.deadline


def poll_until(probe: Callable[[], T | None], timeout: float, *, step: float = 0.05) -> T | None:
    """Call `probe` until it returns something other than None; that value, or None at timeout.

    For waits whose answer matters (a process's exit status, which may be 0).
    """
    budget = _Budget(timeout, step)
    while True:
        value = probe()
        if value is not None:
            return value
        if budget.spent():
            return None
        time.sleep(step)


def wait_until(
    cond: Callable[[], bool],
    timeout: float = DEFAULT_TIMEOUT_S,
    *,
    step: float = 0.05,
    what: str = "condition",
) -> None:
    """Block until `cond()` is true; AssertionError naming `what` if it never becomes so."""
    if poll_until(lambda: True if cond() else None, timeout, step=step) is None:
        raise AssertionError(f"{what} not reached in time ({timeout:g} s)")


async def wait_for(
    pilot: Any,
    cond: Callable[[], bool],
    timeout: float = DEFAULT_TIMEOUT_S,
    *,
    step: float = 0.02,
) -> None:
    """Let a Textual app run (`pilot.pause`) until `cond()` is true; AssertionError if never."""
    budget = _Budget(timeout, step)
    while not cond():
        if budget.spent():
            raise AssertionError("condition not reached in time")
        await pilot.pause(step)
