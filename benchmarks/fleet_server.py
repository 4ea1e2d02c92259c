#!/usr/bin/env python3
"""A fleet of dcgm-exporter pages behind a real Prometheus, for benchmarks and tests.

    from benchmarks.fleet_server import start_fleet
    with start_fleet(folder, hosts=1000, interval="15s") as fleet:
        ... fleet.url  # Prometheus, every page scraped at least once

One loopback HTTP server (standard library, threaded) serves every host's
page at /host/<i>/metrics: 8 GPUs in dcgm-exporter's names (the default
counters of tests/prometheus_harness.py's `dcgm_text`, with `Hostname`, `gpu`,
`UUID`, `modelName`). Two card models: three hosts in four are H100 80GB
HBM3, the fourth A100-SXM4-40GB, and every tenth host's last GPU is in MIG
mode (two 3g.40gb instances, labelled `GPU_I_PROFILE` / `GPU_I_ID` as
dcgm-exporter labels them). Used memory takes one of four values, so
(card, free memory) pairs repeat across the fleet as they do in a real one.

Prometheus (Debian's binary, our own child process on a free port, a
temporary storage folder) scrapes the pages through one file_sd job whose
targets differ by `__metrics_path__`; each target's `instance` label names its
host, as with one exporter per machine. Pages are built once: a scrape costs
the server one write.

Run alone it starts a fleet and prints its URL until interrupted:
    python benchmarks/fleet_server.py --hosts 100
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # tests/prometheus_harness.py: the same Prometheus and pages

from tests.prometheus_harness import PageHTTP, PrometheusServer, dcgm_text  # noqa: E402

GPUS_PER_HOST = 8
H100 = ("NVIDIA H100 80GB HBM3", 81559)
A100 = ("NVIDIA A100-SXM4-40GB", 40960)
MIG_PROFILE = {81559: "3g.40gb", 40960: "3g.20gb"}  # half of each card
_PATH = re.compile(r"^/host/(\d+)/metrics$")


def host_name(i: int) -> str:
    return f"gpu-{i:04d}"


def host_card(i: int) -> tuple[str, int]:
    """(modelName, total MiB) of host `i`: one host in four is an A100 40GB."""
    return A100 if i % 4 == 3 else H100


def used_mib(i: int, g: int) -> float:
    """One of four values: the (card, free memory) pairs repeat across hosts."""
    return 1024.0 * (1 + (g + i) % 4)


def is_mig(i: int, g: int) -> bool:
    return i % 10 == 9 and g == GPUS_PER_HOST - 1


Used = Callable[[int, int], float]  # (host, gpu) -> used MiB


def page(i: int, gpus: int = GPUS_PER_HOST, used: Used = used_mib) -> str:
    """Host `i`'s dcgm-exporter page; a MIG GPU has one series per instance, as
    dcgm-exporter exports it, each instance with its own used and free memory."""
    model, total = host_card(i)
    text = dcgm_text(
        host_name(i), gpus, model=model, total_mib=total, used_mib=lambda g: used(i, g)
    )
    if not any(is_mig(i, g) for g in range(gpus)):
        return text
    out = []
    half = total // 2
    for line in text.splitlines():
        mig_gpu = next((g for g in range(gpus) if is_mig(i, g) and f'{{gpu="{g}",' in line), None)
        if mig_gpu is None:
            out.append(line)
            continue
        name, rest = line.split("{", 1)
        labels, value = rest.rsplit("} ", 1)
        for gi in (1, 2):
            used = 512.0 * gi
            v = {"DCGM_FI_DEV_FB_USED": used, "DCGM_FI_DEV_FB_FREE": half - used}.get(
                name, float(value)
            )
            out.append(
                f'{name}{{{labels},GPU_I_PROFILE="{MIG_PROFILE[total]}",GPU_I_ID="{gi}"}} {v!r}'
            )
    return "\n".join(out) + "\n"


class PageServer:
    """Every host's page from one threaded loopback server, at /host/<i>/metrics."""

    def __init__(self, hosts: int, gpus: int = GPUS_PER_HOST, used: Used = used_mib) -> None:
        self.pages = [page(i, gpus, used).encode() for i in range(hosts)]
        self.scrapes = 0
        self.http = PageHTTP(self._body)
        self.address = self.http.address

    def _body(self, path: str) -> bytes | None:
        found = _PATH.match(path)
        if not found or int(found.group(1)) >= len(self.pages):
            return None
        self.scrapes += 1
        return self.pages[int(found.group(1))]

    def stop(self) -> None:
        self.http.stop()


class FleetPrometheus(PrometheusServer):
    """PrometheusServer with one file_sd job: every host a target on the one page server."""

    def __init__(self, folder: Path, address: str, hosts: int, interval: str) -> None:
        self.address = address
        self.hosts = hosts
        super().__init__(folder, [f"{address}/host/{i}" for i in range(hosts)], interval=interval)

    def write_config(self) -> None:
        sd = [
            {
                "targets": [self.address],
                "labels": {
                    "__metrics_path__": f"/host/{i}/metrics",
                    "instance": f"{host_name(i)}:9400",
                },
            }
            for i in range(self.hosts)
        ]
        (self.folder / "targets.json").write_text(json.dumps(sd))
        (self.folder / "prometheus.yml").write_text(
            f"global:\n  scrape_interval: {self.interval}\n  scrape_timeout: {self.interval}\n"
            "scrape_configs:\n  - job_name: dcgm\n"
            f"    file_sd_configs: [{{files: ['{self.folder / 'targets.json'}'], refresh_interval: 1m}}]\n"
        )


@dataclass
class Fleet:
    hosts: int
    gpus_per_host: int
    pages: PageServer
    prom: FleetPrometheus

    @property
    def url(self) -> str:
        return self.prom.url

    @property
    def gpus(self) -> int:
        """GPU series (a MIG GPU counted once, as the cluster reader joins it)."""
        return self.hosts * self.gpus_per_host

    def stop(self) -> None:
        self.prom.stop()
        self.pages.stop()


@contextmanager
def start_fleet(
    folder: Path,
    hosts: int,
    *,
    gpus: int = GPUS_PER_HOST,
    used: Used = used_mib,
    interval: str = "1s",
    timeout: float = 120.0,
) -> Iterator[Fleet]:
    """A fleet of `hosts` pages of `gpus` GPUs (`used(host, gpu)` MiB in use) and a
    Prometheus that has scraped every one of them."""
    pages = PageServer(hosts, gpus, used)
    prom = FleetPrometheus(folder, pages.address, hosts, interval)
    try:
        prom.start()
        prom.wait_targets_up(timeout)
        series = hosts * gpus + sum(is_mig(i, g) for i in range(hosts) for g in range(gpus))
        prom.wait_for("DCGM_FI_DEV_FB_FREE", series, timeout)
        yield Fleet(hosts, gpus, pages, prom)
    finally:
        prom.stop()
        pages.stop()


def main() -> int:
    import tempfile

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hosts", type=int, default=100)
    ap.add_argument("--interval", default="15s")
    args = ap.parse_args()
    with (
        tempfile.TemporaryDirectory() as tmp,
        start_fleet(Path(tmp), args.hosts, interval=args.interval) as f,
    ):
        print(f"{f.url}  ({f.hosts} hosts, {f.gpus} GPUs); Ctrl-C stops", flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
