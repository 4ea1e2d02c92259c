"""freeze_startup_heap: start-up's garbage is collected, what lives on leaves the collector's walk.

Run in a child interpreter: gc.freeze is process-wide, and freezing pytest's heap
would change what every later test's collections see.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

CHILD = textwrap.dedent(
    """
    import gc, weakref
    from gputui.tui.run import freeze_startup_heap

    class Node:
        pass

    # start-up garbage: a cycle nothing refers to any more
    a, b = Node(), Node()
    a.other, b.other = b, a
    dead = weakref.ref(a)
    del a, b
    # start-up's long-lived objects: kept by the program
    kept = [Node() for _ in range(1000)]
    assert gc.get_freeze_count() == 0
    freeze_startup_heap()
    assert dead() is None, "the start-up cycle was frozen instead of collected"
    assert gc.get_freeze_count() >= 1000
    tracked = {id(o) for g in range(3) for o in gc.get_objects(generation=g)}
    assert not any(id(k) in tracked for k in kept), "a kept object is still walked"
    # objects made afterwards are collected as usual
    c = Node(); c.me = c; later = weakref.ref(c); del c
    gc.collect()
    assert later() is None
    print("ok")
    """
)


def test_startup_garbage_is_collected_and_the_rest_frozen() -> None:
    out = subprocess.run(
        [sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=60, check=False
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_the_dashboard_schedules_the_freeze_after_start_up(monkeypatch) -> None:
    import asyncio

    from gputui.tui import run

    scheduled: list[tuple[float, object]] = []

    class Loop(asyncio.SelectorEventLoop):
        def call_later(self, delay, callback, *args, **kwargs):  # type: ignore[no-untyped-def, override]
            scheduled.append((delay, callback))
            return super().call_later(delay, callback, *args, **kwargs)

    class App:
        poll_in_flight = True

        def __init__(self, *args: object, **kwargs: object) -> None:
            pass

        def hang_up(self, code: int) -> None:
            pass

        def run(self, loop: object) -> int:
            return 0

    monkeypatch.setattr(run.asyncio, "new_event_loop", Loop)
    monkeypatch.setattr("gputui.tui.app.GpuTuiApp", App)
    monkeypatch.setattr(run.os, "_exit", lambda code: None)
    monkeypatch.setattr(run, "ui_on_terminal", lambda: __import__("contextlib").nullcontext())
    run.run_dashboard(object(), fallback_reason=None, interval=1.0, readonly=False)  # type: ignore[arg-type]
    assert (run.GC_FREEZE_AFTER_S, run.freeze_startup_heap) in scheduled
