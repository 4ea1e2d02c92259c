"""Python's cycle collector paused while a layer model is read, built or checked.

Why: reading and checking a large graph makes hundreds of thousands of small objects
that all live until the check ends (layer tables, nodes, every precision's phases and
kernels) and form no cycles. CPython's collector rescans the survivors each time they
have grown by a quarter, which cost a third of a 10,000-layer check. Reference counting
still frees everything as before; the collector runs again when the outermost pause
ends, so a cycle made meanwhile is collected then. Pauses nest.
"""

from __future__ import annotations

import functools
import gc
from collections.abc import Callable
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")


def collector_paused(fn: Callable[P, R]) -> Callable[P, R]:
    """`fn` with the cycle collector off while it runs (left as it was when already off)."""

    @functools.wraps(fn)
    def paused(*args: P.args, **kwargs: P.kwargs) -> R:
        if not gc.isenabled():
            return fn(*args, **kwargs)
        gc.disable()
        try:
            return fn(*args, **kwargs)
        finally:
            gc.enable()

    return paused
