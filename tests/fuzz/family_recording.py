"""Fuzz family `recording`: damaged recordings, read back and appended to.

A small recording of a shipped scenario (a few polls, one keyframe group and the
deltas after it, two alerts) is damaged: bytes of the file overwritten or the file cut
short; a frame's body replaced, with its checksum made to match, by a damaged snapshot
document, a hostile delta or random bytes; an alert row or a meta value replaced; the
schema version changed. The property: reading it (`open_recording`, its span, every
snapshot, one moment, its alerts) either works, every snapshot holding the contract's
types, or is refused with one line naming the file (a UserError, exit 2); a recorder
opening it afterwards refuses in one line or appends, and never changes what could be
read before. Anything else escaping is a crash.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import sys
import zlib
from pathlib import Path
from random import Random
from typing import Any

import family_snapshot_document as documents
import generators as gen

FAMILY = "recording"
REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.append(str(REPO))
HOSTILE = [*gen.NASTY, *gen.HUGE_INTS, *gen.SPECIAL_FLOATS, *gen.NASTY_STRINGS, None, [], {}]


def _recording(rng: Random, path: Path) -> None:
    from gputui.model.alert import AlertChange
    from gputui.recording.store import Recorder
    from gputui.sources.simulated.source import SimulatedSource

    at = [rng.uniform(0, 1e5)]
    source = SimulatedSource.from_scenario(rng.choice(documents.SCENARIOS), clock=lambda: at[0])
    with Recorder(path, keyframe_every=4) as recorder:
        for i in range(6):
            at[0] += 1.0
            snapshot = source.poll()
            alerts = [
                AlertChange(
                    timestamp=snapshot.timestamp,
                    rule="memory_high",
                    state="firing",
                    severity="warning",
                    message="m",
                    gpu="0",
                )
            ]
            recorder.write(snapshot, alerts=alerts if i in (1, 4) else [])  # fmt: skip


def _body(rng: Random, db: sqlite3.Connection, seq: int) -> bytes:
    from gputui.recording import frames

    kind = rng.randrange(3)
    if kind == 0:  # a keyframe's document, damaged as the snapshot family damages one
        (body,) = db.execute("SELECT body FROM frame WHERE base = seq LIMIT 1").fetchone()
        text = documents.damage(rng, frames.unpack(body))
        return zlib.compress(text.encode("utf-8", "surrogatepass"))
    if kind == 1:  # a delta: positions and values of every kind
        pairs = [rng.choice([1, 0, -1, 2**40, 1.5, "1", None]) if i % 2 == 0
                 else rng.choice(HOSTILE) for i in range(2 * rng.randint(0, 4))]  # fmt: skip
        delta: Any = rng.choice([[pairs, []], [[], pairs], pairs, {"a": 1}, 7])
        text = json.dumps(delta, allow_nan=True) if rng.random() < 0.9 else "[[1,"
        return zlib.compress(text.encode("utf-8", "surrogatepass"))
    return rng.randbytes(rng.randint(0, 64))


def damage(rng: Random, path: Path) -> str:
    """Damage the recording at `path` one to three times; what was done, in words."""
    done = []
    for _ in range(rng.randint(1, 3)):
        op = rng.randrange(6)
        if op == 0:
            raw = bytearray(path.read_bytes())
            at = rng.randrange(len(raw))
            raw[at : at + 16] = rng.randbytes(16)
            path.write_bytes(bytes(raw))
            done.append(f"bytes at {at}")
        elif op == 1:
            raw = path.read_bytes()
            path.write_bytes(raw[: rng.randrange(len(raw))])
            done.append("cut short")
            continue
        with (
            contextlib.suppress(sqlite3.DatabaseError, ValueError),
            contextlib.closing(sqlite3.connect(path)) as db,
        ):
            if op == 2:
                seq = rng.randint(1, 6)
                body = _body(rng, db, seq)
                db.execute(
                    "UPDATE frame SET body = ?, crc = ? WHERE seq = ?",
                    (body, zlib.crc32(body), seq),
                )
                done.append(f"frame {seq}")
            elif op == 3:
                value = json.dumps(rng.choice([*HOSTILE, {"state": "firing"}]), allow_nan=True)
                db.execute("UPDATE alert SET body = ? WHERE id = ?", (value, rng.randint(1, 2)))
                done.append("alert")
            elif op == 4:
                db.execute("UPDATE meta SET value = ? WHERE key = ?",
                           (str(rng.choice(HOSTILE)), rng.choice(["host", "created", "gputui_version"])))  # fmt: skip
                done.append("meta")
            else:
                db.execute(f"PRAGMA user_version = {rng.choice([0, 2, 99, -1])}")
                done.append("schema version")
            db.commit()
    return ", ".join(done)


def make_case(rng: Random) -> tuple[int, bytes, str]:
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "run.sqlite"
        _recording(rng, path)
        what = damage(rng, path)
        return rng.randrange(1 << 30), path.read_bytes(), what


def case_text(case: tuple[int, bytes, str]) -> str:
    return f"{case[2]} ({len(case[1])} bytes)"


def _read(path: Path) -> tuple[Any, ...]:
    from gputui.recording.reader import open_recording
    from tests.sources.test_source_contract import check_snapshot

    with open_recording(path) as recording:
        span = recording.span()
        polls = list(recording.snapshots())
        for snapshot in polls:
            wrong = check_snapshot(snapshot)
            if wrong:
                raise AssertionError(f"a field of the wrong type: {wrong[0][:120]}")
        if span is not None:
            recording.snapshot_at((span[0] + span[1]) / 2)
        return span, polls, recording.alerts(), recording.meta


def run_case(case: tuple[int, bytes, str], workdir: Path) -> gen.Outcome:
    from gputui.core.errors import UserError
    from gputui.recording.store import Recorder

    path = workdir / "run.sqlite"
    path.write_bytes(case[1])
    outcome = gen.OK
    try:
        before = _read(path)
    except UserError as exc:
        message = str(exc)
        if not message.startswith(str(path)) or "\n" in message or exc.exit_code != 2:
            return gen.Outcome("wrong-accept", f"refusal is not one clean line: {message[:80]!r}")
        before, outcome = None, gen.Outcome("rejected", message)
    except AssertionError as exc:
        return gen.Outcome("wrong-accept", str(exc))
    try:
        Recorder(path).close()
    except UserError:
        return outcome
    if before is not None and _read(path) != before:
        return gen.Outcome("wrong-accept", "a recorder opening it changed what it holds")
    return outcome
