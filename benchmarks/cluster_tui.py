#!/usr/bin/env python3
"""The cluster TUI at fleet scale: 10 / 100 / 1,000 hosts x 8 GPUs behind a real Prometheus.

    .venv/bin/python benchmarks/cluster_tui.py [--hosts 10,100,1000] [--seconds 30]
        [--scrape 15s] [--baseline 2825eff]

Per fleet size: one threaded stdlib HTTP server in a child process serves
every host's dcgm-exporter page (tests/prometheus_harness.py's dcgm_text, 8 GPUs,
2 card models, memory changing every 30 s) at /host/<i>/metrics; a real
Prometheus (Debian's binary, our own child on a free port) scrapes each page as
its own target (`__metrics_path__`, `instance` host-<i>:9400) at --scrape.

Then `gputui --prometheus URL` runs in a pseudo-terminal (200x50, its output
read and dropped) for --seconds after a warm-up, and we read:
- our CPU: the TUI process's CPU time over the window, as % of one core;
- RSS: its resident memory at the end (MiB);
- queries: the API requests Prometheus counted over the window
  (prometheus_http_requests_total of /api/v1/query, query_range, targets),
  per refresh (the window divided by the refresh interval);
- Prometheus' CPU: its process's CPU time over the window, minus the same
  window measured with no TUI (scraping alone), as % of one core.

Rows: `baseline` is the code at --baseline (`git archive REV src` into a
temporary folder, run with PYTHONPATH there) at its default refresh (1 s);
`new` is this tree at its default refresh (the scrape interval, at least
1 s); `new --interval 1` is this tree paced like the baseline. Aims (issue
22): < 5 % of a core and < 100 MiB at 1,000 hosts at the default refresh.

A script, not a test: it prints figures and asserts nothing.
"""

from __future__ import annotations

import argparse
import fcntl
import os
import pty
import re
import struct
import subprocess
import sys
import tempfile
import termios
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

import psutil

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # tests/prometheus_harness.py: the Prometheus wrapper and dcgm pages

GPUS_PER_HOST = 8
PAGE_VARIANTS = 2  # the pages change every VARIANT_EVERY_S: some rows differ between refreshes
VARIANT_EVERY_S = 30.0
PACE = re.compile(rb"every\s+([0-9.]+)\s+s")
API_HANDLERS = ("/api/v1/query", "/api/v1/query_range", "/api/v1/targets")


# --- the fleet: one server, many pages -----------------------------------------------
def host_name(i: int) -> str:
    return f"host-{i:04d}"


def serve_pages(hosts: int) -> None:
    """Child: every host's page at /host/<i>/metrics; the port on stdout, until stdin closes."""
    from tests.prometheus_harness import PageHTTP, dcgm_text

    models = (("NVIDIA H100 80GB HBM3", 81559), ("NVIDIA A100-SXM4-40GB", 40960))
    pages: list[list[bytes]] = []
    for i in range(hosts):
        model, total = models[i % 2]
        pages.append(
            [
                dcgm_text(
                    host_name(i), GPUS_PER_HOST, model=model, total_mib=total,
                    used_mib=lambda g, i=i, v=v: 1000.0 * ((g + i + v) % 8),
                ).encode()
                for v in range(PAGE_VARIANTS)
            ]
        )  # fmt: skip
    path = re.compile(r"^/host/(\d+)/metrics$")

    def body(where: str) -> bytes | None:
        m = path.match(where)
        if m is None or int(m.group(1)) >= hosts:
            return None
        return pages[int(m.group(1))][int(time.time() / VARIANT_EVERY_S) % PAGE_VARIANTS]

    server = PageHTTP(body)
    print(server.address.rsplit(":", 1)[1], flush=True)
    sys.stdin.read()


def start_prometheus(folder: Path, port: int, hosts: int, scrape: str) -> Any:
    """A harness PrometheusServer whose config lists every page as a target of one job."""
    from tests.prometheus_harness import PrometheusServer

    class FleetPrometheus(PrometheusServer):
        def write_config(self) -> None:
            entries = "\n".join(
                f"      - targets: ['127.0.0.1:{port}']\n"
                f"        labels: {{__metrics_path__: '/host/{i}/metrics', instance: '{host_name(i)}:9400'}}"
                for i in range(hosts)
            )
            (self.folder / "prometheus.yml").write_text(
                f"global:\n  scrape_interval: {self.interval}\n  scrape_timeout: {self.interval}\n"
                f"scrape_configs:\n  - job_name: dcgm\n    static_configs:\n{entries}\n"
            )

    prom = FleetPrometheus(folder, [f"t{i}" for i in range(hosts)], interval=scrape).start()
    prom.wait_targets_up(120)
    prom.wait_for("DCGM_FI_DEV_FB_FREE", hosts * GPUS_PER_HOST, 120)
    return prom


def api_requests(prom: Any) -> int:
    """The API requests Prometheus has answered (its own counter)."""
    with urllib.request.urlopen(prom.url + "/metrics", timeout=10) as r:
        text = r.read().decode()
    total = 0
    for line in text.splitlines():
        if line.startswith("prometheus_http_requests_total{"):
            handler = re.search(r'handler="([^"]+)"', line)
            if handler and handler.group(1) in API_HANDLERS:
                total += int(float(line.rsplit(" ", 1)[1]))
    return total


def cpu_s(proc: psutil.Process) -> float:
    t = proc.cpu_times()
    return float(t.user + t.system + t.children_user + t.children_system)


# --- the TUI in a pseudo-terminal ------------------------------------------------------
def run_tui(pythonpath: str, url: str, extra: list[str], warmup: float, seconds: float,
            prom_pid: int, prom: Any) -> dict[str, float]:  # fmt: skip
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 200, 0, 0))
    env = {**os.environ, "PYTHONPATH": pythonpath, "TERM": "xterm-256color", "COLUMNS": "200",
           "LINES": "50"}  # fmt: skip
    proc = subprocess.Popen(
        [sys.executable, "-m", "gputui", "--prometheus", url, *extra],
        stdin=slave, stdout=slave, stderr=slave, env=env, start_new_session=True, close_fds=True,
    )  # fmt: skip
    os.close(slave)
    out = bytearray()
    pace = [float("nan")]

    def drain() -> None:
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                return
            if not chunk:
                return
            out.extend(chunk)
            for m in PACE.finditer(bytes(out)):  # the info line says the pace
                pace[0] = float(m.group(1))
            del out[: max(0, len(out) - 200)]

    threading.Thread(target=drain, daemon=True).start()
    ps, pp = psutil.Process(proc.pid), psutil.Process(prom_pid)
    try:
        time.sleep(warmup)
        if proc.poll() is not None:
            raise SystemExit(f"the TUI exited: {out.decode(errors='replace')[-500:]}")
        c0, p0, q0, t0 = cpu_s(ps), cpu_s(pp), api_requests(prom), time.monotonic()
        rss = 0
        while time.monotonic() - t0 < seconds:
            time.sleep(1.0)
            rss = max(rss, ps.memory_info().rss)
        c1, p1, q1, t1 = cpu_s(ps), cpu_s(pp), api_requests(prom), time.monotonic()
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        os.close(master)
    span = t1 - t0
    return {"cpu": (c1 - c0) / span, "rss": rss / 2**20, "qps": (q1 - q0) / span,
            "prom": (p1 - p0) / span, "refresh": pace[0]}  # fmt: skip


def idle_prometheus(prom_pid: int, seconds: float) -> float:
    pp = psutil.Process(prom_pid)
    p0, t0 = cpu_s(pp), time.monotonic()
    time.sleep(seconds)
    return (cpu_s(pp) - p0) / (time.monotonic() - t0)


def baseline_tree(rev: str, folder: Path) -> Path:
    out = folder / "baseline"
    out.mkdir()
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "src"], check=True,
                             capture_output=True).stdout  # fmt: skip
    subprocess.run(["tar", "-x", "-C", str(out)], input=archive, check=True)
    return out / "src"


def parse_seconds(text: str) -> float:
    m = re.fullmatch(r"(\d+)(s|m)", text)
    if m is None:
        raise argparse.ArgumentTypeError(f"{text!r}: like 15s or 1m")
    return float(m.group(1)) * (60 if m.group(2) == "m" else 1)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hosts", default="10,100,1000", help="fleet sizes (hosts of 8 GPUs)")
    ap.add_argument("--seconds", type=float, default=30.0, help="measured window per row")
    ap.add_argument("--warmup", type=float, default=10.0, help="seconds before the window")
    ap.add_argument("--scrape", default="15s", help="Prometheus' scrape interval (15s, 1m)")
    ap.add_argument("--baseline", default="2825eff", help="the revision of the baseline rows")
    ap.add_argument("--serve-pages", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.serve_pages:
        serve_pages(args.serve_pages)
        return 0
    from tests.prometheus_harness import PROMETHEUS

    if PROMETHEUS is None:
        print("skipped: no prometheus binary (apt install prometheus)")
        return 0
    parse_seconds(args.scrape)
    sizes = [int(s) for s in args.hosts.split(",")]
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}; "
          f"scrape {args.scrape}, window {args.seconds:g} s after {args.warmup:g} s")  # fmt: skip
    print(
        "CPU and Prometheus: % of one core; queries: API requests Prometheus answered per refresh"
    )
    print(f"{'hosts':>5} {'GPUs':>5}  {'run':<26} {'refresh':>7} {'CPU %':>6} {'RSS MiB':>7}"
          f" {'queries':>7} {'Prom %':>7}")  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        old_src = baseline_tree(args.baseline, folder)
        new_src = ROOT / "src"
        runs = [
            (f"baseline {args.baseline} (default)", str(old_src), []),
            ("new (default)", str(new_src), []),
            ("new --interval 1", str(new_src), ["--interval", "1"]),
        ]
        for hosts in sizes:
            pages = subprocess.Popen([sys.executable, __file__, "--serve-pages", str(hosts)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)  # fmt: skip
            assert pages.stdout is not None and pages.stdin is not None
            port = int(pages.stdout.readline())
            prom = start_prometheus(folder / f"prom-{hosts}", port, hosts, args.scrape)
            try:
                idle = idle_prometheus(prom.proc.pid, args.seconds)
                for label, path, extra in runs:
                    r = run_tui(
                        path, prom.url, extra, args.warmup, args.seconds, prom.proc.pid, prom
                    )
                    refresh = r["refresh"]
                    print(
                        f"{hosts:>5} {hosts * GPUS_PER_HOST:>5}  {label:<26} {refresh:>6g}s"
                        f" {r['cpu'] * 100:6.1f} {r['rss']:7.1f} {r['qps'] * refresh:7.1f}"
                        f" {max(0.0, r['prom'] - idle) * 100:7.1f}",
                        flush=True,
                    )
                print(f"{'':13}(Prometheus scraping alone: {idle * 100:.1f} % of a core)")
            finally:
                prom.stop()
                pages.stdin.close()
                pages.wait(10)
    print("aims at 1,000 hosts, default refresh: CPU < 5 % of a core, RSS < 100 MiB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
