"""Nothing written is lost, and a file gputui cannot vouch for is refused and left as it is:
a recorder killed mid-write, a full disk, a read-only file, a second recorder, a damaged
file, another program's SQLite file, a newer schema."""

from __future__ import annotations

import contextlib
import hashlib
import os
import resource
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from gputui.core.errors import UserError
from gputui.model.snapshot import Snapshot
from gputui.recording.reader import open_recording
from gputui.recording.store import Recorder

from .conftest import record_polls

Recorded = Callable[..., tuple[Path, list[Snapshot]]]
RECORD = [sys.executable, "-m", "gputui", "record", "--source", "demo", "--scenario", "demo-8gpu"]


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def polls_in(path: Path) -> list[Snapshot]:
    with open_recording(path) as recording:
        return list(recording.snapshots())


def wait_for_polls(path: Path, at_least: int, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()
        try:
            with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
                if db.execute("SELECT COUNT(*) FROM frame").fetchone()[0] >= at_least:
                    return
        except sqlite3.Error:
            pass
        time.sleep(0.05)
    raise AssertionError(f"no {at_least} polls recorded in time")


# --- killed, stopped ------------------------------------------------------------------------


@pytest.mark.parametrize("after_s", [0.0, 0.013, 0.031, 0.057])
def test_a_recorder_killed_mid_write_leaves_every_committed_poll(
    tmp_path: Path, after_s: float
) -> None:
    """SIGKILL at varied moments of the write loop (0.05 s apart, ~10 ms of work each)."""
    path = tmp_path / "run.sqlite"
    proc = subprocess.Popen([*RECORD, "--interval", "0.1", "--out", str(path)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip
    wait_for_polls(path, 5, proc)
    time.sleep(after_s)
    proc.kill()
    proc.communicate()
    polls = polls_in(path)
    assert len(polls) >= 5
    assert all(b.timestamp > a.timestamp for a, b in zip(polls, polls[1:], strict=False))
    # The lock died with the process: a new recorder appends after what was kept.
    with Recorder(path) as recorder:
        assert recorder.last_t == polls[-1].timestamp


def test_sigterm_stops_the_recorder_cleanly(tmp_path: Path) -> None:
    path = tmp_path / "run.sqlite"
    proc = subprocess.Popen([*RECORD, "--interval", "0.1", "--out", str(path)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip
    wait_for_polls(path, 3, proc)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert f"{len(polls_in(path))} polls written" in err.decode()
    assert not Path(f"{path}-wal").exists() or Path(f"{path}-wal").stat().st_size == 0


# --- full disk, read-only ------------------------------------------------------------------


def _limit_file_size(limit: int) -> Callable[[], None]:
    def limit_it() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return limit_it


def test_a_full_disk_is_one_line_and_exit_2_with_what_was_written_kept(tmp_path: Path) -> None:
    """RLIMIT_FSIZE: a write past 300 KB fails as on a full disk (gputui ignores SIGXFSZ).
    The WAL reaches it first, after a few polls: those stay, and the line says until when."""
    path = tmp_path / "run.sqlite"
    proc = subprocess.run(
        [*RECORD, "--interval", "0.1", "--out", str(path)],
        capture_output=True,
        timeout=300,
        preexec_fn=_limit_file_size(300_000),
    )
    err = proc.stderr.decode()
    assert proc.returncode == 2, err
    assert "Traceback" not in err
    last = err.strip().splitlines()[-1]
    assert last.startswith(f"gputui: {path}: ") and "recorded up to" in last, err
    assert "disk is full" in last or "cannot write" in last
    kept = polls_in(path)
    assert len(kept) >= 3
    assert last.endswith(time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(kept[-1].timestamp)))


def test_a_read_only_file_is_refused_and_left_as_it_is(recorded: Recorded) -> None:
    path, written = recorded(3)
    before = digest(path)
    path.chmod(0o444)
    with pytest.raises(UserError, match="read-only"):
        Recorder(path)
    assert digest(path) == before
    assert polls_in(path) == written  # still readable


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to mount a read-only tmpfs")
def test_a_read_only_file_system_is_one_line(tmp_path: Path) -> None:
    mount = tmp_path / "mnt"
    mount.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)]).returncode:
        pytest.skip("cannot mount a tmpfs here")
    try:
        record_polls(mount / "run.sqlite", 3, name="demo")
        subprocess.run(["mount", "-o", "remount,ro", str(mount)], check=True)
        proc = subprocess.run([*RECORD, "--out", str(mount / "run.sqlite")],
                              capture_output=True, timeout=60)  # fmt: skip
        err = proc.stderr.decode()
        assert proc.returncode == 2 and "Traceback" not in err
        assert "read-only" in err.strip().splitlines()[-1], err
        new = subprocess.run([*RECORD, "--out", str(mount / "new.sqlite")],
                             capture_output=True, timeout=60)  # fmt: skip
        assert new.returncode == 2 and "Read-only file system" in new.stderr.decode()
    finally:
        subprocess.run(["umount", str(mount)], check=False)


# --- a second recorder -----------------------------------------------------------------------


def test_a_second_recorder_on_the_same_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "run.sqlite"
    first = subprocess.Popen([*RECORD, "--interval", "0.1", "--out", str(path)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip
    try:
        wait_for_polls(path, 2, first)
        second = subprocess.run([*RECORD, "--out", str(path)], capture_output=True, timeout=60)
        assert second.returncode == 2
        assert second.stderr.decode().strip() == (
            f"gputui: {path}: refused: another process is writing it"
        )
        assert first.poll() is None  # the first goes on
        wait_for_polls(path, 4, first)
    finally:
        first.terminate()
        first.communicate()
    assert len(polls_in(path)) >= 4


def test_a_second_recorder_in_one_process_is_refused_too(tmp_path: Path) -> None:
    path = tmp_path / "run.sqlite"
    with Recorder(path), pytest.raises(UserError, match="another process is writing it"):
        Recorder(path)
    Recorder(path).close()  # free again once the first is closed


# --- files gputui cannot vouch for ------------------------------------------------------------


def _refused_both_ways(path: Path, match: str) -> None:
    """Refused by the recorder and the reader, its bytes unchanged (SQLite may add a -wal and
    -shm beside a file in WAL mode while reading it; the file itself is not written)."""
    before, wal = digest(path), path.with_name(path.name + "-wal").exists()
    with pytest.raises(UserError, match=match):
        Recorder(path)
    with pytest.raises(UserError, match=match):
        open_recording(path).span()
    assert digest(path) == before
    wal_now = path.with_name(path.name + "-wal")
    assert not wal_now.exists() or wal_now.stat().st_size == 0 or wal


def test_a_file_that_is_not_sqlite_is_refused_and_never_rewritten(tmp_path: Path) -> None:
    path = tmp_path / "notes.sqlite"
    path.write_bytes(os.urandom(5000))
    _refused_both_ways(path, "not an SQLite file")


def test_another_programs_sqlite_file_is_refused_and_never_rewritten(tmp_path: Path) -> None:
    path = tmp_path / "other.sqlite"
    with contextlib.closing(sqlite3.connect(path)) as db:
        db.execute("CREATE TABLE t (x)")
        db.commit()
    _refused_both_ways(path, "another program's SQLite file")


def test_a_damaged_database_is_refused_and_never_rewritten(recorded: Recorded) -> None:
    path, _ = recorded(200)
    with path.open("r+b") as handle:  # the frame table's root page and beyond: garbage
        handle.seek(16384 + 100)
        handle.write(b"\xa5" * 30000)
    _refused_both_ways(path, "damaged")


def test_a_damaged_poll_is_named_never_decoded(recorded: Recorded) -> None:
    path, written = recorded(10)
    with contextlib.closing(sqlite3.connect(path)) as db:
        body = db.execute("SELECT body FROM frame WHERE seq = 4").fetchone()[0]
        db.execute("UPDATE frame SET body = ? WHERE seq = 4", (body[:-1] + b"\x00",))
        db.commit()
    with open_recording(path) as recording:
        assert list(recording.snapshots(until=written[2].timestamp)) == written[:3]
        with pytest.raises(UserError, match=r"row 4\) is damaged \(its checksum"):
            list(recording.snapshots())


def test_a_newer_schema_is_refused_and_never_rewritten(recorded: Recorded) -> None:
    path, _ = recorded(3)
    with contextlib.closing(sqlite3.connect(path)) as db:
        db.execute("PRAGMA user_version = 2")
    _refused_both_ways(path, r"newer gputui \(schema 2; this one reads up to 1\)")


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to mount a small tmpfs")
def test_a_full_tmpfs_is_the_disk_is_full(tmp_path: Path) -> None:
    """A real ENOSPC: a 384 KiB tmpfs fills up; the line says so and the polls stay."""
    mount = tmp_path / "mnt"
    mount.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=384k", "tmpfs", str(mount)]).returncode:
        pytest.skip("cannot mount a tmpfs here")
    try:
        path = mount / "run.sqlite"
        proc = subprocess.run([*RECORD, "--interval", "0.1", "--out", str(path)],
                              capture_output=True, timeout=300)  # fmt: skip
        err = proc.stderr.decode()
        assert proc.returncode == 2 and "Traceback" not in err, err
        last = err.strip().splitlines()[-1]
        assert last.startswith(f"gputui: {path}: the disk is full; recorded up to "), err
        assert len(polls_in(path)) >= 3
    finally:
        subprocess.run(["umount", str(mount)], check=False)
