#!/usr/bin/env python3
"""Median cost of one poll: the NVML source through the fake NVML library vs the simulated source.

    .venv/bin/python benchmarks/poll.py [--gpus 1,8,16] [--procs 50] [--polls 400]
                                        [--call-cost-us 0] [--fakenvml DIR]

Builds ../shared/fakenvml into a temp folder, writes one fake-NVML scenario and
one simulated-GPU scenario per GPU count (with --procs processes spread over
the GPUs; the fake NVML's PIDs are live idle workers, so host enrichment has
real processes to read), and measures each source in a fresh child process
(the fake library reads its scenario once per process). The fake library's
calls cost ~0 unless --call-cost-us is set, so the NVML column is our Python
overhead plus pynvml's; NVML calls/poll is counted by the library itself.
A script, not a test: it prints figures and asserts nothing.
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
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
MiB = 1024 * 1024


# --- child side -------------------------------------------------------------------------


def child(kind: str, polls: int, scenario: str | None, with_host: bool) -> None:
    t0 = time.perf_counter()
    source: Any
    if kind == "nvml":
        from gputui.sources.nvml.source import NvmlSource

        source = NvmlSource.open(with_host=with_host)
    else:
        from gputui.sources.simulated.source import SimulatedSource

        source = SimulatedSource.from_scenario(Path(scenario or ""), with_host=with_host)
    open_ms = (time.perf_counter() - t0) * 1000
    for _ in range(min(polls, 20)):  # warm-up (also the first, synchronous PCIe read)
        source.poll()
    times = []
    perf = time.perf_counter_ns
    for _ in range(polls):
        a = perf()
        source.poll()
        times.append(perf() - a)
    source.close()
    times.sort()
    out = {
        "open_ms": open_ms,
        "median_us": statistics.median(times) / 1000 if times else 0.0,
        "p90_us": times[int(len(times) * 0.9)] / 1000 if times else 0.0,
    }
    print(json.dumps(out))


# --- parent side ------------------------------------------------------------------------


def nvml_scenario(n_gpus: int, pids: list[int]) -> str:
    lines = ["driver_version = 550.54.15", "cuda_driver_version = 12.4", "period_s = 60", ""]
    for g in range(n_gpus):
        lines += [
            "[device]",
            "name = NVIDIA H100 80GB HBM3",
            f"pci_bus_id = 00000000:{g + 1:02X}:00.0",
            "memory_total = 81559MiB",
            "compute_capability = 9.0",
            "power_limit_w = 700",
            "power_w = 120:690",
            "util_gpu = 0:100",
            "util_mem = 0:70",
            "temperature_c = 30:60",
            "pcie_rx_kbs = 4000:160000",
            "pcie_tx_kbs = 1000:40000",
            "unsupported = fan",
        ]
        for i, pid in enumerate(pids):
            if i % n_gpus == g:
                kind = "graphics" if i % 10 == 9 else "compute"
                lines.append(f"process = {pid} {512 + 64 * i}MiB {kind}")
        lines.append("")
    return "\n".join(lines)


def sim_scenario(n_gpus: int, n_procs: int) -> str:
    lines = ["seed = 7", 'hostname = "bench"', ""]
    for g in range(n_gpus):
        lines += [
            "[[gpu]]",
            'name = "NVIDIA H100 80GB HBM3"',
            f'pci_bus_id = "00000000:{g + 1:02X}:00.0"',
            'memory_total = "81559 MiB"',
            'compute_capability = "9.0"',
            'architecture = "hopper"',
            "power_limit_w = 700",
            "max_sm_clock_mhz = 1980",
            "max_mem_clock_mhz = 2619",
            'unsupported = ["fan"]',
            "",
        ]
    for i in range(n_procs):
        lines += [
            "[[process]]",
            f"gpu = {i % n_gpus}",
            f"pid = {10000 + i}",
            f'command = "python train.py --job {i}"',
            f'gpu_memory = "{512 + 64 * i} MiB"',
            "",
        ]
    return "\n".join(lines)


def run_child(args: list[str], env: dict[str, str]) -> dict[str, Any]:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", *args]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        raise SystemExit(f"child {' '.join(args)} failed:\n{r.stderr}")
    result: dict[str, Any] = json.loads(r.stdout.strip().splitlines()[-1])
    return result


def count_calls(stats_file: Path) -> int:
    if not stats_file.exists():
        return 0
    total = 0
    for line in stats_file.read_text().splitlines():
        if line and not line.startswith("#"):
            total += int(line.split()[-1])
    return total


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--child", choices=["nvml", "sim"])
    ap.add_argument("--scenario")
    ap.add_argument("--host", action="store_true")
    ap.add_argument("--gpus", default="1,8,16")
    ap.add_argument("--procs", type=int, default=50)
    ap.add_argument("--polls", type=int, default=400)
    ap.add_argument("--call-cost-us", type=float, default=0.0)
    ap.add_argument("--fakenvml", type=Path, default=ROOT.parent / "shared" / "fakenvml")
    args = ap.parse_args()
    if args.child:
        child(args.child, args.polls, args.scenario, args.host)
        return 0

    fake = args.fakenvml.resolve()
    gpu_counts = [int(x) for x in args.gpus.split(",")]
    tmp = Path(tempfile.mkdtemp(prefix="gputui-bench-"))
    pid_file = tmp / "workers.conf.pids"
    try:
        subprocess.run(
            ["make", "-s", "-C", str(fake), f"BUILD={tmp / 'lib'}"],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        template = tmp / "workers.conf.in"
        template.write_text("[device]\n" + "process = @PID@ 1MiB\n" * args.procs)
        subprocess.run(
            [str(fake / "start-procs.sh"), str(template), str(tmp / "workers.conf")],
            check=True,
            stderr=subprocess.DEVNULL,
        )
        pids = [int(x) for x in pid_file.read_text().split()]
        base_env = dict(os.environ)
        base_env.update(LD_LIBRARY_PATH=str(tmp / "lib"), FAKE_NVML_QUIET="1")
        base_env.pop("FAKE_NVML_TIME", None)
        if args.call_cost_us:
            base_env["FAKE_NVML_CALL_COST_US"] = str(args.call_cost_us)
        rows = []
        for n in gpu_counts:
            conf = tmp / f"bench-{n}.conf"
            conf.write_text(nvml_scenario(n, pids))
            toml = tmp / f"bench-{n}.toml"
            toml.write_text(sim_scenario(n, args.procs))
            env = dict(base_env, FAKE_NVML_SCENARIO=str(conf))
            polls = ["--polls", str(args.polls)]
            nv = run_child(["nvml", *polls], env)
            nvh = run_child(["nvml", "--host", *polls], env)
            sim = run_child(["sim", "--scenario", str(toml), *polls], env)
            simh = run_child(["sim", "--host", "--scenario", str(toml), *polls], env)
            calls = []
            for p in (0, 50):
                stats = tmp / f"stats-{n}-{p}"
                run_child(["nvml", "--polls", str(p)], dict(env, FAKE_NVML_STATS=str(stats)))
                calls.append(count_calls(stats))
            # the child polls min(p, 20) warm-up + p timed times
            per_poll = (calls[1] - calls[0]) / 70
            rows.append((n, nv, nvh, sim, simh, per_poll))
    finally:
        subprocess.run([str(fake / "stop-procs.sh"), str(pid_file)], check=False)
        shutil.rmtree(tmp, ignore_errors=True)

    cost = f", fake NVML call cost {args.call_cost_us:g} us" if args.call_cost_us else ""
    print(f"median us per poll ({args.polls} polls after 20 warm-up, {args.procs} processes{cost})")
    head = (
        f"{'GPUs':>4}  {'nvml':>8} {'/GPU':>6} {'p90':>7}  {'nvml+host':>9}  {'calls/poll':>10}"
        f"  {'simulated':>9} {'/GPU':>6}  {'sim+host':>8}  {'open+import ms':>14}"
    )
    print(head)
    for n, nv, nvh, sim, simh, per_poll in rows:
        print(
            f"{n:>4}  {nv['median_us']:>8.0f} {nv['median_us'] / n:>6.0f} {nv['p90_us']:>7.0f}"
            f"  {nvh['median_us']:>9.0f}  {per_poll:>10.0f}"
            f"  {sim['median_us']:>9.0f} {sim['median_us'] / n:>6.0f}  {simh['median_us']:>8.0f}"
            f"  {nv['open_ms']:>14.1f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
