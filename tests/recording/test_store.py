"""The recording round-trips exactly, keeps alerts beside the polls, and expires old polls."""

from __future__ import annotations

import socket
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from gputui import __version__
from gputui.model.alert import AlertChange
from gputui.model.record import replace
from gputui.model.snapshot import Snapshot
from gputui.recording import store
from gputui.recording.reader import open_recording
from gputui.recording.store import Recorder

from .conftest import simulated

Recorded = Callable[..., tuple[Path, list[Snapshot]]]


def test_every_poll_reads_back_exactly_as_it_was_polled(recorded: Recorded) -> None:
    path, written = recorded(150, keyframe_every=60)
    with open_recording(path) as recording:
        assert list(recording.snapshots()) == written
        assert recording.span() == (written[0].timestamp, written[-1].timestamp)
        assert len(written[0].devices) == 8 and len(written[0].processes) > 30


def test_a_window_and_a_moment_read_the_polls_in_them(recorded: Recorded) -> None:
    path, written = recorded(150, keyframe_every=60)
    t = [s.timestamp for s in written]
    with open_recording(path) as recording:
        assert list(recording.snapshots(since=t[70], until=t[75])) == written[70:76]
        assert recording.snapshot_at(t[119] + 0.5) == written[119]  # the last delta of a group
        assert recording.snapshot_at(t[120]) == written[120]  # a keyframe
        assert recording.snapshot_at(t[0] - 1) is None
        assert recording.snapshot_at(t[-1] + 99) == written[-1]


def test_the_file_names_its_host_version_and_schema(recorded: Recorded) -> None:
    path, _ = recorded(3)
    with open_recording(path) as recording:
        assert recording.meta.host == socket.gethostname()
        assert recording.meta.gputui_version == __version__
        assert recording.meta.schema_version == 1
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT version FROM migration").fetchall() == [(1,)]
        indexed = {
            r[0] for r in db.execute("SELECT tbl_name FROM sqlite_master WHERE type='index'")
        }
        assert {"frame", "alert"} <= indexed
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_alerts_are_kept_beside_their_polls(tmp_path: Path) -> None:
    source, clock = simulated("demo")
    fired = AlertChange(
        timestamp=0.0, rule="memory_high", state="firing", severity="warning",
        message="GPU 0 memory at 96 %", gpu="0",
    )  # fmt: skip
    path = tmp_path / "run.sqlite"
    with Recorder(path) as recorder:
        for i in range(10):
            clock[0] = float(i)
            snapshot = source.poll()
            alerts = [replace(fired, timestamp=snapshot.timestamp)] if i in (3, 7) else []
            if i == 7:
                alerts[0] = replace(alerts[0], state="cleared", pid=4242, action="restart it")
            recorder.write(snapshot, alerts=alerts)
        t3 = snapshot.timestamp - 6
    with open_recording(path) as recording:
        changes = recording.alerts()
        assert [(a.state, a.timestamp) for a in changes] == [("firing", t3), ("cleared", t3 + 4)]
        assert changes[1].pid == 4242 and changes[1].action == "restart it"
        assert recording.alerts(since=t3 + 1) == changes[1:]
        assert recording.alerts(until=t3 + 1) == changes[:1]


def test_a_poll_that_changed_shape_is_a_keyframe(tmp_path: Path) -> None:
    """A process gone changes the document's shape: that poll is stored whole."""
    source, clock = simulated("demo")
    path = tmp_path / "run.sqlite"
    polls = []
    with Recorder(path) as recorder:
        for i in range(6):
            clock[0] = float(i)
            snapshot = source.poll()
            if i >= 3:
                snapshot = replace(snapshot, processes=snapshot.processes[1:])
            recorder.write(snapshot)
            polls.append(snapshot)
    with sqlite3.connect(path) as db:
        keyframes = [r[0] for r in db.execute("SELECT seq FROM frame WHERE base = seq")]
    assert keyframes == [1, 4]
    with open_recording(path) as recording:
        assert list(recording.snapshots()) == polls


def test_a_poll_stamped_before_the_last_is_skipped(tmp_path: Path) -> None:
    source, clock = simulated("demo")
    path = tmp_path / "run.sqlite"
    with Recorder(path) as recorder:
        recorder.write(replace(source.poll(), timestamp=float("nan")))
        for at in (0.0, 1.0, 0.5, 2.0):
            clock[0] = at
            recorder.write(source.poll())
    with open_recording(path) as recording:
        assert [s.timestamp - recording.span()[0] for s in recording.snapshots()] == [0, 1, 2]  # type: ignore[index]


def test_a_second_session_appends_to_the_recording(tmp_path: Path) -> None:
    source, clock = simulated("demo")
    path = tmp_path / "run.sqlite"
    polls = []
    for session in range(2):
        with Recorder(path, keyframe_every=4) as recorder:
            for i in range(5):
                clock[0] = session * 100 + i
                polls.append(source.poll())
                recorder.write(polls[-1])
    with open_recording(path) as recording:
        assert list(recording.snapshots()) == polls


def test_retention_expires_old_polls_in_small_batches_keeping_a_keyframe(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store, "RETENTION_BATCH", 7)
    source, clock = simulated("demo")
    path = tmp_path / "run.sqlite"
    counts = []
    with Recorder(path, retention_s=60.0, keyframe_every=10) as recorder:
        for i in range(200):
            clock[0] = float(i)
            last = source.poll()
            recorder.write(last)
            with sqlite3.connect(path) as db:
                counts.append(db.execute("SELECT COUNT(*) FROM frame").fetchone()[0])
    # Never more than a batch at once, and the window is kept: 60 s plus the group before.
    assert all(b >= a - 7 for a, b in zip(counts, counts[1:], strict=False))
    with open_recording(path) as recording:
        t0, t1 = recording.span()  # type: ignore[misc]
        assert t1 == last.timestamp and 60 <= t1 - t0 < 70
        first = next(recording.snapshots())
        assert first.timestamp == t0  # the oldest poll kept still decodes


def test_a_reader_follows_a_recording_being_written(tmp_path: Path) -> None:
    source, clock = simulated("demo")
    path = tmp_path / "run.sqlite"
    with Recorder(path) as recorder:
        recorder.write(source.poll())
        with open_recording(path) as recording:
            clock[0] = 1.0
            recorder.write(source.poll())
            assert len(list(recording.snapshots())) == 2
