#!/usr/bin/env python3
"""What the dashboard's poll thread asks NVML and costs, against a baseline checkout, in one run.

    .venv/bin/python benchmarks/snapshot_cost.py [--baseline SRC] [--polls 60]
                                                 [--scenario TEMPLATE] [--fakenvml DIR]

Builds ../shared/fakenvml into a temp folder, starts the idle workers of the
scenario (default: its large.conf.in, 8 GPUs / 40 processes) and, in a fresh
child process per tree (this checkout's src/, and --baseline, e.g. a
`git archive <commit> src | tar -x -C /tmp/base` of an older commit), opens
NvmlSource with the host sampler and polls it --polls times on a simulated
clock that advances 1 s per poll (the dashboard's default interval; the PCIe
sampler and the slow facts follow that clock; the PCIe thread is joined after
each poll). Prints NVML calls per poll (the fake library counts them,
FAKE_NVML_STATS) and CPU ms per poll of the whole process (poll thread and
PCIe threads), median of the polls after the first.

`gputui snapshot` one-shot costs are measured by ../shared/fakenvml/bench-peers.sh
(see docs/tui.md, "Cost"). A script, not a test: it prints figures and asserts
nothing (timings on a shared box are noise for tests; compare rows of one run).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def child(polls: int) -> None:
    import time

    from gputui.sources.nvml.source import NvmlSource

    now = [1000.0]

    def clock() -> float:
        return now[0]

    kwargs: dict[str, Any] = {"pcie_interval_s": 2.0, "clock": clock}
    source = NvmlSource.open(with_host=True, **kwargs)
    cpu = []
    for _ in range(polls):
        t0 = time.process_time()
        source.poll()
        source._pcie.join(5)
        cpu.append((time.process_time() - t0) * 1000)
        now[0] += 1.0
    source.close()
    print(json.dumps({"cpu_ms": statistics.median(cpu[1:]) if len(cpu) > 1 else cpu[0]}))


def count_calls(path: Path) -> dict[str, int]:
    out: dict[str, int] = {}
    if path.exists():
        for line in path.read_text().splitlines():
            if line and not line.startswith("#"):
                name, n = line.split()
                out[name] = out.get(name, 0) + int(n)
    return out


def run_tree(src: Path, polls: int, env: dict[str, str], tmp: Path, tag: str) -> dict[str, Any]:
    """One child on `src`: CPU per poll, and NVML calls of `polls` polls minus those of 1."""
    calls = []
    result: dict[str, Any] = {}
    for n in (1, polls + 1):
        stats = tmp / f"stats-{tag}-{n}"
        child_env = dict(env, PYTHONPATH=str(src), FAKE_NVML_STATS=str(stats))
        r = subprocess.run(
            [sys.executable, str(Path(__file__).resolve()), "--child", "--polls", str(n)],
            env=child_env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        if r.returncode != 0:
            raise SystemExit(f"child on {src} failed:\n{r.stderr}")
        if n > 1:
            result = json.loads(r.stdout.strip().splitlines()[-1])
        calls.append(count_calls(stats))
    one, many = calls
    per_fn = {k: (many.get(k, 0) - one.get(k, 0)) / polls for k in many}
    result["per_poll"] = sum(per_fn.values())
    result["per_fn"] = per_fn
    result["open_and_first"] = sum(one.values())
    return result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--child", action="store_true")
    ap.add_argument("--polls", type=int, default=60)
    ap.add_argument("--baseline", type=Path, help="a src/ folder of another commit")
    ap.add_argument("--fakenvml", type=Path, default=ROOT.parent / "shared" / "fakenvml")
    ap.add_argument("--scenario", type=Path, help="template with @PID@ markers (default: large)")
    args = ap.parse_args()
    if args.child:
        child(args.polls)
        return 0
    fake = args.fakenvml.resolve()
    template = args.scenario or fake / "scenarios" / "large.conf.in"
    tmp = Path(tempfile.mkdtemp(prefix="gputui-snapcost-"))
    conf = tmp / "scenario.conf"
    try:
        subprocess.run(["make", "-s", "-C", str(fake), f"BUILD={tmp / 'lib'}"], check=True,
                       stdout=subprocess.DEVNULL)
        subprocess.run([str(fake / "start-procs.sh"), str(template), str(conf)], check=True,
                       stderr=subprocess.DEVNULL)
        env = dict(os.environ, LD_LIBRARY_PATH=str(tmp / "lib"), FAKE_NVML_SCENARIO=str(conf),
                   FAKE_NVML_QUIET="1")
        env.pop("FAKE_NVML_TIME", None)
        trees = [("this checkout", ROOT / "src")]
        if args.baseline is not None:
            trees.insert(0, ("baseline", args.baseline.resolve()))
        rows = [(label, run_tree(src, args.polls, env, tmp, str(i)))
                for i, (label, src) in enumerate(trees)]
    finally:
        subprocess.run([str(fake / "stop-procs.sh"), str(conf) + ".pids"], check=False)
        shutil.rmtree(tmp, ignore_errors=True)
    ngpu = sum(1 for line in template.read_text().splitlines() if line.strip() == "[device]")
    print(f"{template.name}: {ngpu} GPUs; {args.polls} polls, 1 s apart on a simulated clock")
    print(f"{'tree':<16}{'NVML calls/poll':>16}{'per GPU':>9}{'CPU ms/poll':>13}"
          f"{'open + 1st poll calls':>23}")
    for label, r in rows:
        print(f"{label:<16}{r['per_poll']:>16.1f}{r['per_poll'] / ngpu:>9.2f}{r['cpu_ms']:>13.2f}"
              f"{r['open_and_first']:>23}")
    if len(rows) == 2:
        a, b = rows[0][1]["per_fn"], rows[1][1]["per_fn"]
        changed = sorted(k for k in set(a) | set(b) if abs(a.get(k, 0) - b.get(k, 0)) > 1e-9)
        print("\ncalls per poll that changed (baseline -> this checkout):")
        for k in changed:
            print(f"  {k:<48}{a.get(k, 0):>7.2f} -> {b.get(k, 0):.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
