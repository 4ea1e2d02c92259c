"""`Recorder`: every poll written to a recording, committed before the next one.

What is promised (docs/record.md), and how:
- Nothing written is lost: one transaction per poll in WAL mode, so a recorder killed
  at any instant leaves a file that opens with every poll committed before it.
  `synchronous=NORMAL`: a crash of gputui loses nothing committed; a power cut may lose
  the last polls before a checkpoint, never the file.
- One writer: the file is locked (core/userfile.lock_store) while a recorder has it; a
  second one is refused with a message.
- A file that is not gputui's, is damaged or of a newer schema is refused before any
  write (recording/schema.py), and left as it is.
- A full disk or a read-only file is one line (RecordingError, exit 2) naming the file
  and the last poll kept.
- Retention deletes polls older than the window in small batches, one short transaction
  after a poll's, so the writer never waits on a long delete; it keeps whole keyframe
  groups, so the oldest poll kept still decodes.
"""

from __future__ import annotations

import contextlib
import math
import os
import socket
import sqlite3
import time
import zlib
from collections.abc import Callable, Iterable
from pathlib import Path

from gputui import __version__
from gputui.core.inputfile import shown
from gputui.core.userfile import WriteRefused, lock_store
from gputui.model.alert import AlertChange
from gputui.model.snapshot import Snapshot
from gputui.model.snapshot_encode import snapshot_to_dict
from gputui.recording import frames
from gputui.recording.schema import (
    RecordingError,
    check_file,
    check_header,
    migrate,
    refused,
)

# A keyframe every this many polls (and whenever the document's shape changes): a seek
# decodes at most this many frames; a larger figure saves little (benchmarks/record.py).
KEYFRAME_EVERY = 60
# SQLite's page: rows of ~1 KiB leave a tenth of a 4 KiB page empty; at 8 KiB the file
# is ~9 % smaller (16 KiB saves no more), for a few KiB more written to the WAL per poll.
PAGE_SIZE = 8192
# The WAL is copied into the file past this many pages (SQLite: 1000), so it stays small.
WAL_CHECKPOINT_PAGES = 64
# Rows a retention pass deletes in one transaction.
RETENTION_BATCH = 500


def _why(exc: BaseException) -> str:
    text = str(exc).lower()
    if "full" in text or "too large" in text:
        return "the disk is full"
    if "readonly" in text or "read-only" in text:
        return "the file or its file system is read-only"
    return f"cannot write ({exc})"


class Recorder:
    """Writes snapshots (and the alert changes of their poll) to one recording file.

    Not thread-safe: one thread writes (`gputui record`'s loop, the dashboard's poll
    worker). `clock` gives the time of metadata rows (tests pass their own).
    """

    def __init__(
        self,
        path: Path,
        *,
        retention_s: float | None = None,
        keyframe_every: int = KEYFRAME_EVERY,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.path = path
        self.retention_s = retention_s
        self.keyframe_every = keyframe_every
        self._clock = clock
        try:
            self._lock_fd = lock_store(path)
        except WriteRefused as exc:
            raise refused(path, f"refused: {exc.strerror}") from None
        except OSError as exc:
            raise refused(path, f"cannot create the recording: {exc.strerror or exc}") from None
        try:
            self._conn = self._open()
        except BaseException:
            os.close(self._lock_fd)
            raise
        self._shape: list[object] | None = None
        self._values: list[object] = []
        self._base = 0
        self._since_key = 0
        row = self._conn.execute("SELECT MAX(t), MAX(seq) FROM frame").fetchone()
        self.last_t: float | None = row[0]
        self._next_seq = int(row[1] or 0) + 1
        self.polls = 0

    def _open(self) -> sqlite3.Connection:
        with os.fdopen(os.dup(self._lock_fd), "rb") as handle:
            check_header(self.path, handle.read(100))
        conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        try:
            version = check_file(self.path, conn, integrity=True)
            if version == 0:  # before the first table: a poll's row is ~1 KiB (see PAGE_SIZE)
                conn.execute(f"PRAGMA page_size = {PAGE_SIZE}")
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute(f"PRAGMA wal_autocheckpoint = {WAL_CHECKPOINT_PAGES}")
            migrate(conn, version, __version__, self._clock())
            if version == 0:
                host = socket.gethostname()
                meta = {
                    "gputui_version": __version__,
                    "host": host,
                    "created": repr(self._clock()),
                }
                conn.executemany("INSERT INTO meta VALUES (?, ?)", meta.items())
        except sqlite3.Error as exc:
            conn.close()
            raise refused(self.path, _why(exc)) from None
        except BaseException:
            conn.close()
            raise
        return conn

    def write(self, snapshot: Snapshot, alerts: Iterable[AlertChange] = ()) -> None:
        """Append one poll, committed before this returns; RecordingError on a full disk or
        a read-only file (what was committed before stays). A poll not later than the last
        one recorded (the clock stepped back), or stamped with no finite time, is skipped; its
        alerts are kept."""
        changes = [(a.timestamp, _alert_json(a)) for a in alerts if math.isfinite(a.timestamp)]
        frame = None
        fresh = self.last_t is None or snapshot.timestamp > self.last_t
        if fresh and math.isfinite(snapshot.timestamp):
            frame = self._frame(snapshot)
        try:
            self._conn.execute("BEGIN IMMEDIATE")
            if frame is not None:
                keyframe, body = frame
                seq = self._next_seq
                base = seq if keyframe else self._base
                self._conn.execute(
                    "INSERT INTO frame (seq, t, base, crc, body) VALUES (?, ?, ?, ?, ?)",
                    (seq, snapshot.timestamp, base, zlib.crc32(body), body),
                )
            self._conn.executemany("INSERT INTO alert (t, body) VALUES (?, ?)", changes)
            self._conn.execute("COMMIT")
        except sqlite3.Error as exc:
            self._rollback()
            self._shape = None  # the next poll starts a keyframe
            raise self._failed(exc) from None
        if frame is not None:
            self.last_t = snapshot.timestamp
            self._base = base
            self._next_seq += 1
        self.polls += 1
        if self.retention_s is not None:
            self.expire(snapshot.timestamp - self.retention_s)

    def _frame(self, snapshot: Snapshot) -> tuple[bool, bytes]:
        document = snapshot_to_dict(snapshot)
        shape, values = frames.flatten(document)
        keyframe = shape != self._shape or self._since_key >= self.keyframe_every - 1
        if keyframe:
            body = frames.pack(document)
            self._since_key = 0
        else:
            body = frames.pack(frames.changes(self._values, values))
            self._since_key += 1
        self._shape, self._values = shape, values
        return keyframe, body

    def expire(self, before: float) -> int:
        """Delete up to RETENTION_BATCH polls (and alerts) older than `before`, keeping the
        keyframe the oldest kept poll decodes from; how many rows went."""
        try:
            row = self._conn.execute(
                "SELECT MAX(seq) FROM frame WHERE base = seq AND t <= ?", (before,)
            ).fetchone()
            gone = 0
            self._conn.execute("BEGIN IMMEDIATE")
            if row[0] is not None:
                gone += self._conn.execute(
                    "DELETE FROM frame WHERE seq IN"
                    " (SELECT seq FROM frame WHERE seq < ? ORDER BY seq LIMIT ?)",
                    (row[0], RETENTION_BATCH),
                ).rowcount
            gone += self._conn.execute(
                "DELETE FROM alert WHERE id IN"
                " (SELECT id FROM alert WHERE t < ? ORDER BY t LIMIT ?)",
                (before, RETENTION_BATCH),
            ).rowcount
            self._conn.execute("COMMIT")
        except sqlite3.Error as exc:
            self._rollback()
            raise self._failed(exc) from None
        return gone

    def _rollback(self) -> None:
        with contextlib.suppress(sqlite3.Error):
            if self._conn.in_transaction:
                self._conn.execute("ROLLBACK")

    def _failed(self, exc: sqlite3.Error) -> RecordingError:
        kept = (
            "nothing"
            if self.last_t is None
            else time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(self.last_t))
        )
        return RecordingError(f"{shown(self.path)}: {_why(exc)}; recorded up to {kept}")

    def close(self) -> None:
        """Commit nothing more, checkpoint the WAL into the file, release the lock. Twice is fine."""
        if self._lock_fd < 0:
            return
        with contextlib.suppress(sqlite3.Error):
            self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        with contextlib.suppress(sqlite3.Error):
            self._conn.close()
        os.close(self._lock_fd)
        self._lock_fd = -1

    def __enter__(self) -> Recorder:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


def _alert_json(alert: AlertChange) -> str:
    import json

    return json.dumps(alert.to_json(), separators=(",", ":"), allow_nan=False)
