"""The dashboard's thread executor: jobs on daemon threads, idle ones reused, a stuck job
never holding up the next (tui/run.py DaemonThreadExecutor)."""

from __future__ import annotations

import threading

import pytest

from gputui.tui.run import DaemonThreadExecutor


def test_sequential_jobs_share_one_daemon_thread() -> None:
    executor = DaemonThreadExecutor()
    threads = set()
    for n in range(5):
        future = executor.submit(lambda n=n: (threading.current_thread(), n * 2))
        thread, result = future.result(timeout=5)
        assert result == n * 2
        assert thread.daemon
        threads.add(thread)
    assert len(threads) == 1


def test_a_stuck_job_does_not_hold_up_the_next_and_errors_reach_the_future() -> None:
    executor = DaemonThreadExecutor()
    release = threading.Event()
    stuck = executor.submit(release.wait, 10)
    other = executor.submit(lambda: threading.current_thread())
    assert other.result(timeout=5) is not None  # ran while the first job still waits
    assert not stuck.done()
    release.set()
    assert stuck.result(timeout=5) is True

    def boom() -> None:
        raise RuntimeError("poll failed")

    with pytest.raises(RuntimeError, match="poll failed"):
        executor.submit(boom).result(timeout=5)
    assert executor.submit(lambda: 7).result(timeout=5) == 7  # the thread survived it
