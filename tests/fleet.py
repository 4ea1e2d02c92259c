"""A small simulated fleet behind a real Prometheus, shared by the integration tests
(the `fleet` fixture of tests/conftest.py), and the host scenario its exporters run.

Hosts (1 s scrapes):
- node-a, node-b: `gputui exporter` processes on simulated GPUs (Hostname label);
  node-a's GPU 0 is also scraped through a dcgm-exporter page (a mix on one host).
- dgx-1: a dcgm-exporter 4.x page (lowercase `hostname` and the old `uuid`).
- dgx-2: a dcgm page with NaN temperatures, no power metric at all, and a
  duplicated series for GPU 0.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from tests.prometheus_harness import (
    ExporterProcess,
    PrometheusServer,
    StaticEndpoint,
    dcgm_text,
    stop_all,
)

# Two GPUs, one of which cannot report power; a process whose arguments hold a secret.
HOST_SCENARIO = """
seed = 7
hostname = "{hostname}"
driver_version = "550.54.15"
cuda_driver_version = "12.4"

[host]
cpu_count = 4
memory_total = "16 GiB"

[[gpu]]
name = "NVIDIA A100-SXM4-80GB"
memory_total = "81920 MiB"
compute_capability = "8.0"
architecture = "ampere"
power_limit_w = 400
max_sm_clock_mhz = 1410
max_mem_clock_mhz = 1593
{lost}

[[gpu]]
name = "NVIDIA GeForce RTX 3090"
memory_total = "24576 MiB"
compute_capability = "8.6"
architecture = "ampere"
power_limit_w = 350
max_sm_clock_mhz = 2100
max_mem_clock_mhz = 9751
unsupported = ["power", "fan", "ecc"]

[[process]]
gpu = 0
pid = 4242
user = "alice"
command = "python train.py --wandb-key=SECRET123 --lr 3e-4"
workload = "training"
gpu_memory = "30 GiB"
start_s = -600

[[process]]
gpu = 1
pid = 5151
user = "bob"
command = "/usr/bin/python3 serve.py"
workload = "inference"
gpu_memory = "8 GiB"
start_s = -300
"""


def write_scenario(folder: Path, hostname: str, *, lost_after_s: float | None = None) -> Path:
    path = folder / f"{hostname}.toml"
    lost = f"lost_after_s = {lost_after_s}" if lost_after_s is not None else ""
    path.write_text(HOST_SCENARIO.format(hostname=hostname, lost=lost))
    return path


@dataclass
class Fleet:
    prom: PrometheusServer
    exporters: dict[str, ExporterProcess]
    static: dict[str, StaticEndpoint]
    folder: Path
    started: float = field(default_factory=time.monotonic)

    def stop(self) -> None:
        self.prom.stop()
        for e in self.exporters.values():
            e.stop()
        stop_all(list(self.static.values()))


def start_fleet(folder: Path) -> Fleet:
    exporters: dict[str, ExporterProcess] = {}
    static: dict[str, StaticEndpoint] = {}
    try:
        for host in ("node-a", "node-b"):
            scenario = write_scenario(folder, host)
            exporters[host] = ExporterProcess(
                ["--source", "demo", "--scenario", str(scenario), "--listen", "127.0.0.1:0",
                 "--interval", "0.5"]
            )  # fmt: skip
        static["dgx-1"] = StaticEndpoint(
            dcgm_text("dgx-1", 4, host_label="hostname", uuid_label="uuid")
        )
        static["dgx-2"] = StaticEndpoint(
            dcgm_text(
                "dgx-2",
                2,
                model="NVIDIA A100-SXM4-40GB",
                total_mib=40960,
                nan=("DCGM_FI_DEV_GPU_TEMP",),
                skip=("DCGM_FI_DEV_POWER_USAGE",),
                duplicate=True,
            )
        )
        static["node-a-dcgm"] = StaticEndpoint(
            dcgm_text("node-a", 1, model="NVIDIA A100-SXM4-80GB", total_mib=81920)
        )
        targets = [e.address for e in exporters.values()] + [s.address for s in static.values()]
        prom = PrometheusServer(folder / "prometheus", targets).start()
        fleet = Fleet(prom, exporters, static, folder)
        prom.wait_targets_up()
        # every series of every target has been ingested at least once
        prom.wait_for("DCGM_FI_DEV_FB_FREE", 2 + 2 + 4 + 2 + 1)
        prom.wait_for("gputui_process_gpu_memory_bytes", 4)
        return fleet
    except BaseException:
        for e in exporters.values():
            e.stop()
        for s in static.values():
            s.stop()
        raise
