"""The recording file: its tables, its versions, and the checks before anything touches it.

A recording is an SQLite file (WAL mode) marked as gputui's by `PRAGMA application_id`
and versioned by `PRAGMA user_version` plus a `migration` table (one row per schema step
applied, with the gputui that applied it). A file that is not SQLite, not gputui's, of a
newer schema or damaged is refused with one line, before anything is written to it.

Tables (docs/record.md):
- `meta(key, value)`: schema_version, gputui_version (of the writer that created the
  file), host, created.
- `frame(seq, t, base, crc, body)`: one row per poll; `body` is a keyframe (the encoded
  snapshot, compressed) when `base = seq`, else the leaves that changed since the row
  before (recording/frames.py), applied in `seq` order from the keyframe `base`. `crc`
  is the CRC-32 of `body`: a damaged row is named, never decoded into wrong numbers.
- `alert(id, t, body)`: `AlertChange.to_json()` of each alert change, as JSON text.
Both time columns are indexed.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from gputui.core.errors import UserError
from gputui.core.inputfile import shown

SCHEMA_VERSION = 1
# "gptu": what `PRAGMA application_id` holds in a gputui recording.
APPLICATION_ID = 0x67707475
SQLITE_MAGIC = b"SQLite format 3\x00"

# Each schema step, in order: MIGRATIONS[n - 1] takes a file from version n - 1 to n.
MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (
        "CREATE TABLE migration (version INTEGER PRIMARY KEY, applied REAL NOT NULL,"
        " gputui_version TEXT NOT NULL)",
        "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
        "CREATE TABLE frame (seq INTEGER PRIMARY KEY, t REAL NOT NULL,"
        " base INTEGER NOT NULL, crc INTEGER NOT NULL, body BLOB NOT NULL)",
        "CREATE INDEX frame_t ON frame (t)",
        "CREATE TABLE alert (id INTEGER PRIMARY KEY, t REAL NOT NULL, body TEXT NOT NULL)",
        "CREATE INDEX alert_t ON alert (t)",
    ),
)
assert len(MIGRATIONS) == SCHEMA_VERSION


class RecordingError(UserError):
    """A recording gputui will not read or write: one line naming the file (exit 2)."""


def refused(path: Path, why: str) -> RecordingError:
    return RecordingError(f"{shown(path)}: {why}")


def check_header(path: Path, head: bytes) -> None:
    """A non-empty file that does not start as SQLite is refused (and never written)."""
    if head and (len(head) < 100 or not head.startswith(SQLITE_MAGIC)):
        raise refused(path, "not a gputui recording (not an SQLite file); left as it is")


def check_file(path: Path, conn: sqlite3.Connection, *, integrity: bool) -> int:
    """The schema version of an existing file; refuses one that is not gputui's, newer than
    this gputui or (with `integrity`, SQLite's quick check) damaged. Reads only."""
    try:
        app_id = conn.execute("PRAGMA application_id").fetchone()[0]
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
        if app_id == 0 and version == 0 and not tables:
            return 0  # an empty database: a new recording
        if app_id != APPLICATION_ID:
            raise refused(path, "not a gputui recording (another program's SQLite file)")
        if version > SCHEMA_VERSION:
            raise refused(
                path,
                f"recorded by a newer gputui (schema {version}; this one reads up to "
                f"{SCHEMA_VERSION}): upgrade gputui; the file is left as it is",
            )
        if integrity:
            verdict = conn.execute("PRAGMA quick_check(1)").fetchone()[0]
            if verdict != "ok":
                raise refused(path, "the recording is damaged (SQLite's check failed)")
    except sqlite3.DatabaseError as exc:
        raise refused(path, f"the recording is damaged ({exc}); left as it is") from None
    return int(version)


def migrate(conn: sqlite3.Connection, version: int, gputui_version: str, now: float) -> None:
    """Apply the schema steps after `version`, each in one transaction with its row."""
    for step in range(version, SCHEMA_VERSION):
        conn.execute("BEGIN IMMEDIATE")
        try:
            if step == 0:
                conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
            for statement in MIGRATIONS[step]:
                conn.execute(statement)
            conn.execute("INSERT INTO migration VALUES (?, ?, ?)", (step + 1, now, gputui_version))
            conn.execute(f"PRAGMA user_version = {step + 1}")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
