#!/usr/bin/env python3
"""The cluster path at scale: Prometheus reads at 8/64/512 GPUs, and the exporter's scrapes.

    .venv/bin/python benchmarks/cluster.py [--sizes 8,64,512] [--refreshes 20] [--scrapes 200]

Part 1, the cluster view's refresh. A child process serves 64 generated
dcgm-exporter pages (8 GPUs each, the documented default counters); a real
Prometheus (Debian's binary, our own process on a free port, 1 s scrapes)
scrapes them. Each size selects 1, 8 or 64 hosts with --match, so the same
server answers every row. Per refresh: wall time and our CPU time of
`poll_cluster()`, the HTTP requests it made, the range query of the
sparklines, and the UI half (filling the host and GPU tables in a headless
Textual app). Baseline in the same run: a per-host reader (one query per
metric per host), the design the issue rules out.

Part 2, `gputui exporter` at 8 GPUs / 40 processes (simulated): scrape
latency and the exporter process's CPU per scrape, with the poller idle
(--interval 3600: scrapes only) and at --interval 1. Baseline: polling and
encoding on every scrape (what an exporter without the background poller
does), measured in-process on the same scenario.

A script, not a test: it prints figures and asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # tests/prometheus_harness.py: the same Prometheus and pages as the tests

HOSTS = 64
GPUS_PER_HOST = 8


def serve_fleet() -> None:
    """Child: the generated dcgm pages, addresses on stdout, until stdin closes."""
    from tests.prometheus_harness import StaticEndpoint, dcgm_text

    pages = [
        StaticEndpoint(dcgm_text(f"h{i:02d}", GPUS_PER_HOST, used_mib=lambda g, i=i: 1000.0 * ((g + i) % 8)))
        for i in range(HOSTS)
    ]
    print(json.dumps([p.address for p in pages]), flush=True)
    sys.stdin.read()


def ms(values: list[float]) -> str:
    return f"{statistics.median(values) * 1000:7.1f}"


def timed_refreshes(source: Any, refreshes: int) -> tuple[list[float], list[float], list[int], Any]:
    cluster = source.poll_cluster()  # the first refresh also reads the targets API
    walls, cpus, reqs = [], [], []
    for _ in range(refreshes):
        w, c = time.perf_counter(), time.process_time()
        cluster = source.poll_cluster()
        walls.append(time.perf_counter() - w)
        cpus.append(time.process_time() - c)
        reqs.append(cluster.requests)
    return walls, cpus, reqs, cluster


def refresh_rows(url: str, sizes: list[int], refreshes: int) -> None:
    from gputui.sources.prometheus.series import SAMPLE_METRICS, VIEW_METRICS
    from gputui.sources.prometheus.source import PrometheusSource

    print(f"\n1. cluster refresh ({refreshes} refreshes each, medians; Prometheus at {url})")
    print("   view: the cluster view's 8 metrics; all: every field (snapshot/fit --prometheus)")
    print(
        f"{'GPUs':>5} {'hosts':>5} | view: {'req':>3} {'wall ms':>7} {'CPU ms':>6}"
        f" | all: {'req':>3} {'wall ms':>7} {'CPU ms':>6} | {'range ms':>8} {'UI ms':>6}"
        f" | baseline per-host: {'req':>4} {'wall ms':>7} {'CPU ms':>6}"
    )
    for gpus in sizes:
        hosts = max(1, gpus // GPUS_PER_HOST)
        match = 'Hostname=~"' + "|".join(f"h{i:02d}" for i in range(hosts)) + '"'
        view = PrometheusSource(url, match=match, metrics=VIEW_METRICS)
        v_walls, v_cpus, v_reqs, cluster = timed_refreshes(view, refreshes)
        assert len(cluster.gpus) == gpus, (len(cluster.gpus), gpus)
        full = PrometheusSource(url, match=match)
        a_walls, a_cpus, a_reqs, _ = timed_refreshes(full, refreshes)
        ranges = []
        for _ in range(max(3, refreshes // 4)):
            w = time.perf_counter()
            history = view.history("DCGM_FI_DEV_GPU_UTIL", 600.0, points=60)
            ranges.append(time.perf_counter() - w)
        ui = ui_fill_seconds(cluster, shifted(cluster), history, max(3, refreshes // 4))
        # Baseline: what one query per host per metric costs on the same server.
        names = [n for n in SAMPLE_METRICS if n.startswith("DCGM_")]
        bw, bc = time.perf_counter(), time.process_time()
        before = full.client.requests
        for h in cluster.hosts:
            for n in names:
                full.client.query(f'{n}{{Hostname="{h.name}"}}')
        base_req = full.client.requests - before
        base_wall, base_cpu = time.perf_counter() - bw, time.process_time() - bc
        print(
            f"{gpus:>5} {hosts:>5} |       {statistics.median(v_reqs):>3.0f} {ms(v_walls)} {ms(v_cpus):>6}"
            f" |      {statistics.median(a_reqs):>3.0f} {ms(a_walls)} {ms(a_cpus):>6}"
            f" | {ms(ranges):>8} {ms(ui):>6} |                    {base_req:>4}"
            f" {base_wall * 1000:7.1f} {base_cpu * 1000:6.1f}"
        )


def shifted(cluster: Any) -> Any:
    """The same fleet with every GPU's utilisation and memory changed: every row redraws."""
    from dataclasses import replace

    hosts = []
    for h in cluster.hosts:
        gpus = []
        for g in h.gpus:
            s = g.sample
            if s is not None:
                s = replace(
                    s,
                    utilization_gpu=((s.utilization_gpu or 0) + 37) % 101,
                    memory_used=(s.memory_used or 0) + 2**20,
                    temperature_c=(s.temperature_c or 0) + 1,
                )
            gpus.append(replace(g, sample=s))
        hosts.append(replace(h, gpus=tuple(gpus)))
    return replace(cluster, hosts=tuple(hosts))


def ui_fill_seconds(cluster: Any, other: Any, history: Any, repeats: int) -> list[float]:
    """The UI thread's half of a refresh in a headless app (rows, sort, filter, cell updates),
    alternating two snapshots whose every GPU row differs (the worst steady case).
    Textual's paint afterwards is not counted: it draws only the visible rows."""
    from gputui.sources.prometheus.view import ViewData
    from gputui.tui.cluster_app import ClusterApp
    from gputui.tui.cluster_fetch import summary_of

    def whole(c: Any) -> ViewData:
        """Every host's GPUs on screen: the worst case of the view's UI half."""
        return ViewData(tuple(summary_of(h) for h in c.hosts), c, 0, None)

    class Frozen:
        url = cluster.url

        def poll_cluster(self) -> Any:
            return cluster

        def history(self, *a: Any, **k: Any) -> Any:
            return history

    times: list[float] = []

    async def go() -> None:
        app = ClusterApp(Frozen(), interval=3600)  # type: ignore[arg-type]
        async with app.run_test(size=(160, 60)) as pilot:
            for _ in range(100):
                if app.refreshes:
                    break
                await pilot.pause(0.05)
            views = [whole(c) for c in (other, cluster)]
            for i in range(repeats):
                t = time.perf_counter()
                app.main.show(views[i % 2], history)
                times.append(time.perf_counter() - t)
                await pilot.pause()  # let the tables lay out and paint before the next one

    asyncio.run(go())
    return times


def scenario_8x40(folder: Path) -> Path:
    base = (ROOT / "src/gputui/sources/simulated/scenarios/demo-8gpu.toml").read_text()
    extra = "".join(
        f'\n[[process]]\ngpu = {g}\npid = {900000 + g}\nuser = "bench"\n'
        f'command = "python worker.py --rank {g}"\nworkload = "inference"\ngpu_memory = "2 GiB"\n'
        for g in range(40 - base.count("[[process]]"))
    )
    path = folder / "bench-8x40.toml"
    path.write_text(base + extra)
    return path


def exporter_rows(scenario: Path, scrapes: int) -> None:
    import psutil

    from gputui.sources.simulated.scenario import load_scenario

    sc = load_scenario(scenario)
    print(f"\n2. exporter scrapes ({len(sc.gpus)} GPUs, {len(sc.processes)} processes, {scrapes} scrapes each)")
    print("   CPU ms/scrape: the exporter process's CPU time over the run / scrapes (its polls included)")
    print(f"{'':34} {'median ms':>9} {'p95 ms':>7} {'CPU ms/scrape':>13} {'bytes':>7}")
    for interval in ("3600", "1"):
        proc = subprocess.Popen(
            [sys.executable, "-m", "gputui", "exporter", "--source", "demo", "--scenario", str(scenario),
             "--listen", "127.0.0.1:0", "--interval", interval],
            stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        assert proc.stderr is not None
        url = ""
        while not url:
            line = proc.stderr.readline()
            if not line:
                raise SystemExit("exporter did not start")
            if "serving " in line:
                url = line.split("serving ", 1)[1].split()[0]
        body = b""
        while b"DCGM_FI_DEV_GPU_UTIL" not in body:
            body = urllib.request.urlopen(url).read()
        ps = psutil.Process(proc.pid)
        for _ in range(20):
            urllib.request.urlopen(url).read()
        times = []
        c0 = sum(ps.cpu_times()[:2])
        for _ in range(scrapes):
            t = time.perf_counter()
            body = urllib.request.urlopen(url).read()
            times.append(time.perf_counter() - t)
        cpu = (sum(ps.cpu_times()[:2]) - c0) / scrapes
        proc.terminate()
        proc.wait(5)
        times.sort()
        label = "gputui exporter, poller idle" if interval == "3600" else "gputui exporter, polling every 1 s"
        print(
            f"{label:34} {ms(times):>9} {times[int(len(times) * 0.95)] * 1000:7.2f}"
            f" {cpu * 1000:13.2f} {len(body):7}"
        )
    # Baseline: poll + encode on every scrape, in this process.
    from prometheus_client import CollectorRegistry, generate_latest

    from gputui.catalog import load_catalog
    from gputui.exporter.poller import Poller
    from gputui.sources.simulated.source import SimulatedSource

    poller = Poller(SimulatedSource(sc, with_host=True), interval=1.0, catalog=load_catalog())
    registry = CollectorRegistry(auto_describe=False)
    registry.register(poller)
    times, cpus = [], []
    for _ in range(scrapes):
        t, c = time.perf_counter(), time.process_time()
        poller.poll_once()
        generate_latest(registry)
        times.append(time.perf_counter() - t)
        cpus.append(time.process_time() - c)
    times.sort()
    print(
        f"{'baseline: poll on every scrape':34} {ms(times):>9} {times[int(len(times) * 0.95)] * 1000:7.2f}"
        f" {statistics.mean(cpus) * 1000:13.2f}      (in-process, no HTTP)"
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="8,64,512", help="GPU counts (multiples of 8, at most 512)")
    ap.add_argument("--refreshes", type=int, default=20)
    ap.add_argument("--scrapes", type=int, default=200)
    ap.add_argument("--serve-fleet", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.serve_fleet:
        serve_fleet()
        return 0
    sizes = [int(s) for s in args.sizes.split(",")]
    if any(s % GPUS_PER_HOST or not 0 < s <= HOSTS * GPUS_PER_HOST for s in sizes):
        ap.error(f"--sizes: multiples of {GPUS_PER_HOST} up to {HOSTS * GPUS_PER_HOST}")
    from tests.prometheus_harness import PROMETHEUS, PrometheusServer

    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        if PROMETHEUS is None:
            print("\n1. skipped: no prometheus binary (apt install prometheus)")
        else:
            pages = subprocess.Popen(
                [sys.executable, __file__, "--serve-fleet"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
            )
            assert pages.stdout is not None and pages.stdin is not None
            addresses = json.loads(pages.stdout.readline())
            prom = PrometheusServer(folder / "prometheus", addresses).start()
            try:
                prom.wait_targets_up(60)
                prom.wait_for("DCGM_FI_DEV_FB_FREE", HOSTS * GPUS_PER_HOST, 60)
                time.sleep(3)  # a few scrapes of history
                refresh_rows(prom.url, sizes, args.refreshes)
            finally:
                prom.stop()
                pages.stdin.close()
                pages.wait(10)
        exporter_rows(scenario_8x40(folder), args.scrapes)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
