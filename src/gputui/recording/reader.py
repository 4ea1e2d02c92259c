"""Reading a recording back: `open_recording(path) -> Recording`.

The API `gputui replay`, the replay source and `gputui report` read through:
`span()`, `snapshots(since, until)`, `snapshot_at(t)`, `alerts(since, until)` and
`meta`. A recording comes from outside (it may be damaged, edited, or written by
another gputui), so this is a boundary: the file is opened read-only, never written;
each row's CRC is checked and each snapshot decoded by the checked decoder
(model/snapshot_decode.py); whatever is wrong is one line naming the file (exit 2).
"""

from __future__ import annotations

import sqlite3
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

from gputui.core.errors import UserError
from gputui.core.inputfile import check_option_file, open_regular
from gputui.core.textsafe import visible
from gputui.model.alert import AlertChange, alert_from_json
from gputui.model.record import record
from gputui.model.snapshot import Snapshot
from gputui.model.snapshot_decode import decode_snapshot
from gputui.recording import frames
from gputui.recording.schema import RecordingError, check_file, check_header, refused

# Rows fetched from SQLite at a time while iterating.
FETCH_ROWS = 256


@record
class RecordingMeta:
    """What the file says about itself."""

    schema_version: int
    gputui_version: str | None = None  # of the gputui that created the file
    host: str | None = None
    created: float | None = None


class _Decoder:
    """Frames, in `seq` order from a keyframe, into snapshots."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.document: dict[str, Any] | None = None
        self.refs: list[frames.Ref] = []

    def feed(self, seq: int, t: float, base: int, crc: int, body: bytes) -> None:
        where = f"the poll at {t!r} (row {seq})"
        if zlib.crc32(body) != crc:
            raise refused(self.path, f"{where} is damaged (its checksum does not match)")
        try:
            value = frames.unpack(body)
            if base == seq:
                if not isinstance(value, dict):
                    raise ValueError("a keyframe that is not an object")
                self.document = value
                self.refs = frames.leaf_refs(value)
            elif self.document is None:
                raise ValueError("a change with no keyframe before it")
            else:
                if not isinstance(value, list):
                    raise ValueError("a change that is not a list")
                frames.apply(self.refs, value)
        except ValueError as exc:
            self.document = None
            raise refused(self.path, f"{where} is damaged ({visible(str(exc))})") from None

    def snapshot(self) -> Snapshot:
        assert self.document is not None
        try:
            return decode_snapshot(self.document)
        except UserError as exc:
            raise refused(self.path, str(exc)) from None


class Recording:
    """An open recording (read-only). Close it, or use it as a context manager."""

    def __init__(self, path: Path, conn: sqlite3.Connection, meta: RecordingMeta) -> None:
        self.path = path
        self.meta = meta
        self._conn = conn

    def _query(self, sql: str, args: tuple[object, ...] = ()) -> sqlite3.Cursor:
        try:
            return self._conn.execute(sql, args)
        except sqlite3.DatabaseError as exc:
            raise refused(self.path, f"the recording is damaged ({exc})") from None

    def span(self) -> tuple[float, float] | None:
        """The times of the first and last poll recorded; None when none is."""
        t0, t1 = self._query("SELECT MIN(t), MAX(t) FROM frame").fetchone()
        return None if t0 is None else (float(t0), float(t1))

    def times(self, since: float | None = None, until: float | None = None) -> list[float]:
        """The time of every poll in the window, in order (for a time bar; no decoding)."""
        lo, hi = _window(since, until)
        rows = self._query("SELECT t FROM frame WHERE t >= ? AND t <= ? ORDER BY t", (lo, hi))
        return [float(r[0]) for r in rows]

    def snapshots(
        self, since: float | None = None, until: float | None = None
    ) -> Iterator[Snapshot]:
        """Every poll from `since` to `until` (Unix times, both included), in order."""
        lo, hi = _window(since, until)
        first = self._query(
            "SELECT base FROM frame WHERE t >= ? ORDER BY t LIMIT 1", (lo,)
        ).fetchone()
        if first is None:
            return
        decoder = _Decoder(self.path)
        cursor = self._query(
            "SELECT seq, t, base, crc, body FROM frame WHERE seq >= ? ORDER BY seq", (first[0],)
        )
        while True:
            try:
                rows = cursor.fetchmany(FETCH_ROWS)
            except sqlite3.DatabaseError as exc:
                raise refused(self.path, f"the recording is damaged ({exc})") from None
            if not rows:
                return
            for seq, t, base, crc, body in rows:
                if t > hi:
                    return
                decoder.feed(seq, t, base, crc, body)
                if t >= lo:
                    yield decoder.snapshot()

    def snapshot_at(self, t: float) -> Snapshot | None:
        """The last poll at or before `t`; None before the first."""
        row = self._query(
            "SELECT seq, base FROM frame WHERE t <= ? ORDER BY t DESC LIMIT 1", (t,)
        ).fetchone()
        if row is None:
            return None
        seq, base = row
        decoder = _Decoder(self.path)
        for r in self._query(
            "SELECT seq, t, base, crc, body FROM frame WHERE seq >= ? AND seq <= ? ORDER BY seq",
            (base, seq),
        ).fetchall():
            decoder.feed(*r)
        if decoder.document is None:
            raise refused(self.path, f"the poll at {t!r} has no keyframe")
        return decoder.snapshot()

    def alerts(self, since: float | None = None, until: float | None = None) -> list[AlertChange]:
        """The alert changes from `since` to `until`, in time order."""
        import json

        lo, hi = _window(since, until)
        out = []
        for rowid, body in self._query(
            "SELECT id, body FROM alert WHERE t >= ? AND t <= ? ORDER BY t, id", (lo, hi)
        ):
            try:
                out.append(alert_from_json(json.loads(body)))
            except (ValueError, TypeError) as exc:
                raise refused(
                    self.path, f"alert row {rowid} is damaged ({visible(str(exc))})"
                ) from None
        return out

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> Recording:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


def _window(since: float | None, until: float | None) -> tuple[float, float]:
    return (-float("inf") if since is None else since, float("inf") if until is None else until)


def open_recording(path: Path) -> Recording:
    """Open a recording to read (never written: SQLite's read-only mode); RecordingError
    naming the file when it is not one gputui reads."""
    path = Path(path)
    check_option_file(path, "recording", cap=1 << 62)
    with open_regular(path) as handle:
        head = handle.read(100)
    if not head:
        raise refused(path, "an empty file, not a recording")
    check_header(path, head)
    uri = f"file:{quote(str(path.resolve()))}?mode=ro"
    try:
        conn = sqlite3.connect(uri, uri=True, check_same_thread=False)
    except sqlite3.Error as exc:
        raise refused(path, f"cannot open ({exc})") from None
    try:
        version = check_file(path, conn, integrity=False)
        if version == 0:
            raise refused(path, "not a gputui recording (an empty database)")
        meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise refused(path, f"the recording is damaged ({exc})") from None
    except BaseException:
        conn.close()
        raise
    created = meta.get("created")
    try:
        when = float(created) if created is not None else None
    except ValueError:
        when = None
    return Recording(
        path,
        conn,
        RecordingMeta(
            schema_version=version,
            gputui_version=_text(meta.get("gputui_version")),
            host=_text(meta.get("host")),
            created=when,
        ),
    )


def _text(value: object) -> str | None:
    return visible(value) if isinstance(value, str) else None


__all__ = ["Recording", "RecordingError", "RecordingMeta", "open_recording"]
