#!/usr/bin/env python3
"""`fit --prometheus` and `snapshot --prometheus` on fleets of 10, 100 and 1,000 hosts.

    .venv/bin/python benchmarks/fleet.py [--sizes 10,100,1000] [--runs 1] [--baseline 2825eff]
        [--kinds dcgm,gputui]

Each size and kind is its own fleet (benchmarks/fleet_server.py): one loopback
server of pages, 8 GPUs a host, two card models, scraped by a real Prometheus
every 15 s. Kind `dcgm`: dcgm-exporter pages (no processes, a few MIG GPUs);
kind `gputui`: `gputui exporter` pages with 4 processes per GPU (the
processes' series are most of the fleet's: 64 per host). On it, as subprocesses (a user's command line):
`gputui fit examples/models.toml --prometheus URL` (and `--json`) and
`gputui snapshot --prometheus URL` (and `--json`): wall time, the child's CPU
time and its peak RSS (wait4), and the lines printed. Each figure's ratio to
the same command at the smallest size stands beside the aims (fit within 3x,
snapshot within 4x, both under 100 MiB), for this tree and for the baseline:
the code at --baseline (`git archive REV src catalog examples` into a temporary
folder, run with PYTHONPATH there), in the same run on the same fleets. Runs alternate between
the two trees; the median of --runs is shown.

A script, not a test: it prints figures and asserts nothing. Wall times on a
busy machine move with its load (printed first); the CPU column moves less.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.fleet_server import GPUS_PER_HOST, PAGES, start_fleet  # noqa: E402

MODELS = str(ROOT / "examples" / "models.toml")
COMMANDS: dict[str, tuple[list[str], float]] = {  # name: (arguments before the URL, aim)
    "fit": (["fit", MODELS], 3.0),
    "fit --json": (["fit", MODELS, "--json"], 3.0),
    "snapshot": (["snapshot"], 4.0),
    "snapshot --json": (["snapshot", "--json"], 4.0),
}
RSS_AIM_MIB = 100.0


@dataclass
class Run:
    wall: float
    cpu: float
    rss_mib: float
    lines: int
    code: int


def run_once(src: Path, argv: list[str], url: str, timeout: float) -> Run:
    args, extra = argv[:], []
    if args[-1] == "--json":
        args, extra = args[:-1], ["--json"]
    cmd = [sys.executable, "-m", "gputui", *args, "--prometheus", url, *extra]
    env = {**os.environ, "PYTHONPATH": str(src)}
    with tempfile.TemporaryFile() as out:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.PIPE, env=env)
        deadline = start + timeout
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() > deadline:
                proc.kill()
                pid, status, usage = os.wait4(proc.pid, 0)
                break
            time.sleep(0.005)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
        out.seek(0)
        lines = sum(1 for _ in out)
    if proc.returncode not in (0, 1) or "Traceback" in err or (proc.returncode and err.strip()):
        print(f"   ! {' '.join(args)} exited {proc.returncode}: {err.strip()[-300:]}", flush=True)
    return Run(
        wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, lines, proc.returncode
    )


def median_run(runs: list[Run]) -> Run:
    return Run(
        statistics.median(r.wall for r in runs),
        statistics.median(r.cpu for r in runs),
        max(r.rss_mib for r in runs),
        runs[-1].lines,
        runs[-1].code,
    )


def baseline_tree(rev: str, folder: Path) -> Path:
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", rev, "src", "catalog", "examples"],
        capture_output=True,
        check=True,
    ).stdout
    folder.mkdir(parents=True)
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
    return folder / "src"


Results = dict[tuple[str, str, int], Run]  # (tree, command, hosts) -> the median run


def measure(sizes: list[int], runs: int, rev: str, timeout: float, kind: str) -> None:
    results: Results = {}
    trees = {"after": ROOT / "src"}
    with tempfile.TemporaryDirectory() as tmp:
        if rev:
            trees["before"] = baseline_tree(rev, Path(tmp) / "baseline")
        for hosts in sizes:
            t0 = time.perf_counter()
            with start_fleet(
                Path(tmp) / f"fleet-{kind}-{hosts}", hosts, interval="15s", timeout=600, kind=kind
            ) as fleet:
                print(
                    f"{kind} fleet, {hosts:,} hosts ({hosts * GPUS_PER_HOST:,} GPUs): "
                    f"Prometheus at {fleet.url} ready in "
                    f"{time.perf_counter() - t0:.0f} s, load {os.getloadavg()[0]:.1f}",
                    flush=True,
                )
                for name, (argv, _) in COMMANDS.items():
                    got: dict[str, list[Run]] = {tree: [] for tree in trees}
                    for _ in range(runs):
                        for tree, src in trees.items():
                            got[tree].append(run_once(src, argv, fleet.url, timeout))
                    for tree in trees:
                        results[(tree, name, hosts)] = median_run(got[tree])
                    print(
                        f"   {name:16} "
                        + "  ".join(
                            f"{tree}: {results[(tree, name, hosts)].wall:6.2f} s wall "
                            f"{results[(tree, name, hosts)].cpu:6.2f} s CPU "
                            f"{results[(tree, name, hosts)].rss_mib:5.0f} MiB"
                            for tree in trees
                        ),
                        flush=True,
                    )
    table(results, sizes, list(trees), kind)


def table(results: Results, sizes: list[int], trees: list[str], kind: str) -> None:
    small = sizes[0]
    print(
        f"\n{kind} fleet: ratios are to the same command at {small:,} hosts; aims: fit within 3x, "
        f"snapshot within 4x (wall), peak RSS under {RSS_AIM_MIB:.0f} MiB"
    )
    head = f"{'command':16} {'hosts':>6} {'GPUs':>6}"
    for tree in trees:
        head += f" | {tree + ':':7} {'wall s':>7} {'x':>5} {'CPU s':>6} {'x':>5} {'RSS MiB':>7} {'lines':>8}"
    print(head + " | aim")
    for name, (_, aim) in COMMANDS.items():
        for hosts in sizes:
            row = f"{name:16} {hosts:>6,} {hosts * GPUS_PER_HOST:>6,}"
            for tree in trees:
                r, base = results[(tree, name, hosts)], results[(tree, name, small)]
                row += (
                    f" | {'':7} {r.wall:7.2f} {r.wall / base.wall:5.1f} {r.cpu:6.2f} "
                    f"{r.cpu / base.cpu:5.1f} {r.rss_mib:7.0f} {r.lines:8,}"
                )
            after = results[("after", name, hosts)]
            ok = (
                after.wall / results[("after", name, small)].wall <= aim
                and after.rss_mib < RSS_AIM_MIB
            )
            print(row + f" | {aim:g}x, <{RSS_AIM_MIB:.0f} MiB: {'met' if ok else 'NOT met'}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10,100,1000", help="hosts per fleet, smallest first")
    ap.add_argument("--runs", type=int, default=1, help="runs of each command per tree (median)")
    ap.add_argument(
        "--baseline", default="2825eff", help="git revision of the baseline ('' for none)"
    )
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds per command")
    ap.add_argument(
        "--kinds", default="dcgm,gputui", help="fleets: dcgm (dcgm-exporter pages), gputui "
        "(gputui exporter pages with processes)"
    )  # fmt: skip
    args = ap.parse_args()
    kinds = [k for k in args.kinds.split(",") if k]
    if not kinds or any(k not in PAGES for k in kinds):
        ap.error(f"--kinds: some of {', '.join(PAGES)}")
    sizes = [int(s) for s in args.sizes.split(",")]
    if sorted(sizes) != sizes or sizes[0] < 1:
        ap.error("--sizes: host counts, smallest first")
    print(
        f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}; "
        f"this tree {ROOT}, baseline {args.baseline or 'none'}",
        flush=True,
    )
    for kind in kinds:
        measure(sizes, max(1, args.runs), args.baseline, args.timeout, kind)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
