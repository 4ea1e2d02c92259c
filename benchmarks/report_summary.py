#!/usr/bin/env python3
"""What `gputui report`'s statistics cost over long runs, and that their memory stays flat.

    .venv/bin/python benchmarks/report_summary.py [--hours 1,6] [--scenario demo-8gpu.toml]

Builds 600 polls (one a second) of a simulated scenario (by default the 8-GPU node, 38
processes), then feeds `gputui.usage.summary.summarise` a day's worth by replaying them
with shifted timestamps (the base polls are made once, outside what is measured). Prints,
per length, the time per poll and the peak of memory allocated while summarising
(tracemalloc, so the times are tracemalloc's, slower than plain runs). The peak should
not grow with the run's length. A script, not a test: it prints figures, asserts nothing.
"""

from __future__ import annotations

import argparse
import time
import tracemalloc
from collections.abc import Iterator
from dataclasses import replace

from gputui.core.resources import scenario_path
from gputui.model.snapshot import Snapshot
from gputui.sources.simulated.source import SimulatedSource
from gputui.usage.summary import summarise

BASE = 600


def stream(base: list[Snapshot], polls: int) -> Iterator[Snapshot]:
    """The base polls again and again, later each time: the processes' running times move
    with the clock, so each stays one process (PID and start) over the whole run."""
    t0 = base[0].timestamp
    for i in range(polls):
        snap = base[i % BASE]
        shift = i - i % BASE
        procs = tuple(
            p if p.running_s is None else replace(p, running_s=p.running_s + shift)
            for p in snap.processes
        )
        yield replace(snap, timestamp=t0 + i, processes=procs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--hours", default="1,6")
    parser.add_argument("--scenario", default="demo-8gpu.toml")
    args = parser.parse_args()
    from pathlib import Path

    source = SimulatedSource.from_scenario(scenario_path(Path(args.scenario)), clock=lambda: 0.0)
    base = [source.snapshot_at(float(t)) for t in range(BASE)]
    gpus, procs = len(base[0].devices), len(base[0].processes)
    print(f"{args.scenario}: {gpus} GPUs, {procs} processes, one poll a second")
    polls = 3600
    started = time.perf_counter()
    for _ in stream(base, polls):
        pass
    making = time.perf_counter() - started
    started = time.perf_counter()
    summarise(stream(base, polls))
    elapsed = time.perf_counter() - started - making
    print(f"1 h without tracemalloc: {elapsed / polls * 1e6:.0f} us/poll summarising")
    for hours in (float(h) for h in args.hours.split(",")):
        polls = int(hours * 3600)
        tracemalloc.start()
        started = time.perf_counter()
        run = summarise(stream(base, polls))
        elapsed = time.perf_counter() - started
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        print(
            f"{hours:g} h ({polls} polls): {elapsed:.1f} s, {elapsed / polls * 1e6:.0f} us/poll, "
            f"peak allocated {peak / 2**20:.2f} MiB, {len(run.processes)} processes"
        )


if __name__ == "__main__":
    main()
