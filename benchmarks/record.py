#!/usr/bin/env python3
"""What a recording costs: bytes per poll, a day's size, `gputui record`'s CPU, replay seeks.

    .venv/bin/python benchmarks/record.py [--polls 3600] [--cpu-seconds 60] [--seeks 200]

On 8 GPUs and 40 processes: the shipped demo-8gpu scenario (8 H100s, 37 processes, a
224-core host) with three more processes, on the simulator's clock (no waiting).

1. Bytes per poll and a day at 1 s: `--polls` polls written by the Recorder (a keyframe
   every 60 polls, the changed leaves between), the file's size over the polls.
   Baselines in the same run: every poll's encoded snapshot as plain JSON (an NDJSON
   recorder such as all-smi's), and compressed whole in the same SQLite layout (the
   store without deltas).
2. CPU of `gputui record --interval 1` on that scenario: the child's user + system time
   over `--cpu-seconds` after a 5 s warm-up, as a share of one core. Baseline: the
   simulated source's own poll, measured in-process (what any recorder pays to poll).
3. Replay seek on a day: an hour recorded as in 1, copied 24 times with the times
   shifted (a synthetic day in seconds; the snapshots inside keep the first hour's
   timestamps, which the seek does not read), then `snapshot_at` at random times.
   Baseline: the seek of a store without an index or keyframes, decoding from the start
   (measured over the first hour, scaled to the middle of the day).

Figures depend on the machine and its load. A script, not a test: it asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXTRA_PROCESSES = 3
DAY_S = 86400


def bench_scenario(folder: Path) -> Path:
    """demo-8gpu with EXTRA_PROCESSES more processes (copies of its last, new PIDs)."""
    from gputui.core.resources import scenarios_dir

    text = (scenarios_dir() / "demo-8gpu.toml").read_text(encoding="utf-8")
    last = text[text.rindex("[[process]]") :]
    extra = [last.replace("pid = 409834", f"pid = {500000 + i}") for i in range(EXTRA_PROCESSES)]
    path = folder / "bench-8gpu-40.toml"
    path.write_text(text.rstrip() + "\n\n" + "\n".join(extra), encoding="utf-8")
    return path


def polls(scenario: Path, count: int) -> list[object]:
    from gputui.sources.simulated.source import SimulatedSource

    at = [0.0]
    source = SimulatedSource.from_scenario(scenario, clock=lambda: at[0])
    out = []
    for i in range(count):
        at[0] = float(i)
        out.append(source.poll())
    return out


def part_size(snapshots: list[object], folder: Path) -> Path:
    from gputui.model.snapshot_encode import snapshot_to_dict
    from gputui.recording.store import Recorder

    path = folder / "hour.sqlite"
    cpu = time.process_time()
    with Recorder(path) as recorder:
        for s in snapshots:
            recorder.write(s)  # type: ignore[arg-type]
    cpu = time.process_time() - cpu
    n = len(snapshots)
    size = path.stat().st_size
    docs = [json.dumps(snapshot_to_dict(s), separators=(",", ":")) for s in snapshots]  # type: ignore[arg-type]
    ndjson = sum(len(d) + 1 for d in docs)
    whole = folder / "whole.sqlite"
    db = sqlite3.connect(whole)
    db.execute("PRAGMA page_size = 8192")
    db.execute("PRAGMA journal_mode = WAL")
    db.execute("CREATE TABLE frame (seq INTEGER PRIMARY KEY, t REAL, body BLOB)")
    db.execute("CREATE INDEX frame_t ON frame (t)")
    for i, d in enumerate(docs):
        db.execute(
            "INSERT INTO frame (t, body) VALUES (?, ?)", (float(i), zlib.compress(d.encode(), 6))
        )
    db.commit()
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    whole_size = whole.stat().st_size
    processes = len(snapshots[0].processes)  # type: ignore[attr-defined]
    gpus = len(snapshots[0].devices)  # type: ignore[attr-defined]
    print(f"1. {n} polls of {gpus} GPUs and {processes} processes at 1 s")
    print("                                    bytes/poll    a day at 1 s")
    for label, total in (
        ("gputui record (keyframes + deltas)", size),
        ("baseline: NDJSON, plain", ndjson),
        ("baseline: SQLite, whole zlib JSON", whole_size),
    ):
        print(f"   {label:34} {total / n:9.0f}   {total / n * DAY_S / 1e6:9.1f} MB")
    print(f"   aim: under 100 MB a day.  Recorder.write CPU: {cpu / n * 1000:.2f} ms a poll")
    return path


def part_cpu(scenario: Path, seconds: float, folder: Path, snapshots: list[object]) -> None:
    from gputui.sources.simulated.source import SimulatedSource

    out = folder / "cpu.sqlite"
    proc = subprocess.Popen(
        [sys.executable, "-m", "gputui", "record", "--source", "demo", "--scenario", str(scenario),
         "--interval", "1", "--out", str(out)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    tick = os.sysconf("SC_CLK_TCK")

    def cpu_s() -> float:
        fields = Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / tick

    try:
        time.sleep(5.0)
        c0, w0 = cpu_s(), time.monotonic()
        time.sleep(seconds)
        c1, w1 = cpu_s(), time.monotonic()
    finally:
        proc.terminate()
        proc.wait(30)
    share = (c1 - c0) / (w1 - w0) * 100
    source = SimulatedSource.from_scenario(scenario)
    samples = []
    for _ in range(30):
        started = time.process_time()
        source.poll()
        samples.append(time.process_time() - started)
    poll_ms = statistics.median(samples) * 1000
    print(f"2. gputui record --interval 1, {seconds:g} s after a 5 s warm-up")
    print(
        f"   gputui record process: {share:.2f} % of a core ({(c1 - c0) * 1000 / (w1 - w0):.1f} ms a second)"
    )
    print(
        f"   baseline: the simulated source's poll alone: {poll_ms:.1f} ms a poll ({poll_ms / 10:.2f} % of a core at 1 s)"
    )
    print("   aim: under 0.5 % of a core")


def part_seek(hour: Path, folder: Path, seeks: int) -> None:
    from gputui.recording.reader import open_recording

    day = folder / "day.sqlite"
    day.write_bytes(hour.read_bytes())
    db = sqlite3.connect(day)
    (n,) = db.execute("SELECT COUNT(*) FROM frame").fetchone()
    (t0,) = db.execute("SELECT MIN(t) FROM frame").fetchone()
    copies = DAY_S // n
    for k in range(1, copies):
        db.execute(
            "INSERT INTO frame SELECT seq + ?, t + ?, base + ?, crc, body FROM frame WHERE seq <= ?",
            (k * n, float(k * n), k * n, n),
        )
    db.commit()
    db.close()
    started = time.perf_counter()
    recording = open_recording(day)
    opened = time.perf_counter() - started
    span = recording.span()
    assert span is not None
    rng = random.Random(5)
    times = []
    for _ in range(seeks):
        at = rng.uniform(*span)
        started = time.perf_counter()
        snapshot = recording.snapshot_at(at)
        times.append(time.perf_counter() - started)
        assert snapshot is not None
    started = time.perf_counter()
    scanned = sum(1 for _ in recording.snapshots(until=t0 + n - 1))
    scan = time.perf_counter() - started
    size = day.stat().st_size
    print(
        f"3. a day at 1 s: {n * copies} polls, {size / 1e6:.1f} MB, opened in {opened * 1000:.1f} ms"
    )
    print(f"   snapshot_at, {seeks} random times: median {statistics.median(times) * 1000:.1f} ms,"
          f" max {max(times) * 1000:.1f} ms")  # fmt: skip
    print(f"   baseline: decoding from the start (no index, no keyframes): {scan / scanned * 1000:.2f} ms"
          f" a poll, {scan / scanned * DAY_S / 2:.0f} s to reach the middle of the day")  # fmt: skip
    recording.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--polls", type=int, default=3600)
    parser.add_argument("--cpu-seconds", type=float, default=60.0)
    parser.add_argument("--seeks", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        scenario = bench_scenario(folder)
        snapshots = polls(scenario, args.polls)
        hour = part_size(snapshots, folder)
        part_cpu(scenario, args.cpu_seconds, folder, snapshots)
        part_seek(hour, folder, args.seeks)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
