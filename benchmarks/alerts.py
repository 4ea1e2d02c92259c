#!/usr/bin/env python3
"""What the alert rules cost per poll: the engine (gputui.alerts) as the dashboard runs it.

    .venv/bin/python benchmarks/alerts.py [--scenario demo-8gpu.toml] [--polls 4000]

Runs the dashboard's AlertLog (the engine once per poll, the GPUs' events kept) over a
simulated scenario's snapshots, one simulated second apart (made before the clock
starts), and prints the median cost of one update; compare it with one dashboard refresh
(benchmarks/tui.py). A script, not a test: it prints figures and asserts nothing.
"""

from __future__ import annotations

import argparse
import statistics
import time

from gputui.core.resources import scenario_path
from gputui.model.record import replace
from gputui.sources.simulated.source import SimulatedSource
from gputui.tui.alert_log import AlertLog


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", default="demo-8gpu.toml")
    parser.add_argument("--polls", type=int, default=4000)
    args = parser.parse_args()
    from pathlib import Path

    source = SimulatedSource.from_scenario(scenario_path(Path(args.scenario)), clock=lambda: 0.0)
    distinct = [source.snapshot_at(600.0 + i) for i in range(min(args.polls, 300))]
    update_us = []
    log = AlertLog()
    changes = 0
    for i in range(args.polls):
        # one simulated second apart, past the last one: the hold and clear times run
        snap = replace(distinct[i % len(distinct)], timestamp=600.0 + i)
        t1 = time.perf_counter()
        changes += len(log.update(snap))
        update_us.append((time.perf_counter() - t1) * 1e6)
    print(f"{args.scenario}: {len(snap.devices)} GPUs, {len(snap.processes)} processes, "
          f"{args.polls} polls, {changes} alert changes")  # fmt: skip
    print(f"  alert rules     median {statistics.median(update_us):8.0f} us  "
          f"p90 {statistics.quantiles(update_us, n=10)[-1]:.0f} us")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
