"""A MIG GPU across the fleet, from `gputui exporter` to the readers, against a real Prometheus;
and what a team lead asks of that fleet first: GPU memory per user, and GPUs holding memory at
0 % utilisation (`idle-1`, a dcgm-exporter page whose GPU 0 holds 20,000 MiB at 0 %).

The setup a user reported: four `gputui exporter` instances on loopback, one of them
(`node-mig`) serving the shipped mig scenario (an A100 80 GB split 3g.40gb / 2g.20gb /
1g.10gb, and an RTX 3090), scraped by a real Prometheus. A job gets one MIG device, never
the card: the exporter exports each device's memory with dcgm-exporter's labels, the fleet
fit ranks the devices and never the parent, and the cluster view lists them.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gputui.core.resources import scenarios_dir
from gputui.sources.prometheus.source import PrometheusSource
from gputui.sources.prometheus.view import ViewReader
from gputui.tui.cluster_app import ClusterApp
from gputui.tui.screens.cluster import SortedTable
from tests.fleet import write_scenario
from tests.prometheus_harness import (
    PROMETHEUS,
    ExporterProcess,
    PrometheusServer,
    StaticEndpoint,
    dcgm_text,
)
from tests.tui.test_cluster_tui import column, wait_refreshed

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(PROMETHEUS is None, reason="needs the prometheus binary"),
]
ROOT = Path(__file__).resolve().parents[2]
QWEN = str(ROOT / "examples" / "llm" / "qwen2.5-7b.json")
GiB = 1 << 30


@pytest.fixture(scope="module")
def prom(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrometheusServer]:
    folder = tmp_path_factory.mktemp("mig-fleet")
    common = ["--source", "demo", "--listen", "127.0.0.1:0", "--interval", "0.5"]
    exporters: list[ExporterProcess] = []
    idle = StaticEndpoint(dcgm_text("idle-1", 2, used_mib=lambda g: 20000.0 - 19000 * g))
    try:
        for host in ("node-a", "node-b", "node-c"):
            scenario = write_scenario(folder, host)
            exporters.append(ExporterProcess([*common, "--scenario", str(scenario)]))
        mig = str(scenarios_dir() / "mig.toml")
        exporters.append(ExporterProcess([*common, "--scenario", mig, "--hostname", "node-mig"]))
        targets = [e.address for e in exporters] + [idle.address]
        server = PrometheusServer(folder / "prometheus", targets).start()
        try:
            server.wait_targets_up()
            server.wait_for('DCGM_FI_DEV_FB_FREE{Hostname="node-mig"}', 3 + 1)
            server.wait_for('gputui_process_gpu_memory_bytes{Hostname="node-mig"}', 5)
            yield server
        finally:
            server.stop()
    finally:
        idle.stop()
        for e in exporters:
            e.stop()


def gputui(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gputui", *args], capture_output=True, text=True, timeout=120
    )


def test_fleet_fit_ranks_the_mig_devices_never_the_parent(prom: PrometheusServer) -> None:
    args = ("fit", QWEN, "--mode", "generate", "--seq-len", "16384", "--prometheus", prom.url)
    r = gputui(*args, "--json", "--all")  # every GPU, not the best 10
    assert r.returncode == 0, r.stderr
    (entry,) = json.loads(r.stdout)["fleet"]
    mig_gpu = [g for g in entry["gpus"] if g["host"] == "node-mig" and g["gpu"] == 0]
    assert all(g["mig"] is not None for g in mig_gpu), mig_gpu  # never the card as a whole
    assert sorted(g["mig"]["profile"] for g in mig_gpu) == ["1g.10gb", "2g.20gb", "3g.40gb"]
    for g in mig_gpu:  # each device's own memory, never the card's 80 GiB or its 44 GiB free
        assert g["memory_free"] <= g["memory_total"] < 40 * GiB
    text = gputui(*args)
    assert text.returncode == 0, text.stderr
    parents = [ln for ln in text.stdout.splitlines() if "node-mig GPU 0 " in ln and "MIG" not in ln]
    assert parents == []
    assert "node-mig GPU 0 MIG 3g.40gb (GI 1)" in text.stdout


def test_snapshot_lists_each_mig_device_in_the_one_notation(prom: PrometheusServer) -> None:
    r = gputui("snapshot", "--prometheus", prom.url, "--json")
    assert r.returncode == 0, r.stderr
    host = next(h for h in json.loads(r.stdout)["hosts"] if h["host"] == "node-mig")
    assert host["gpus"] == 2  # MIG devices are not GPUs of their own
    devices = host["mig_devices"]
    assert [(d["mig"], d["profile"], d["gpu_instance_id"]) for d in devices] == [
        ("0:0", "3g.40gb", 1),
        ("0:1", "2g.20gb", 2),
        ("0:2", "1g.10gb", 3),
    ]
    gpu0 = next(d for d in host["devices"] if d["info"]["index"] == 0)["sample"]
    # the card's memory is its devices' (dcgm-exporter and gputui export none for the card)
    assert gpu0["memory_used"] == sum(d["memory_used"] for d in devices)
    assert gpu0["memory_free"] == sum(d["memory_free"] for d in devices)
    procs = {p["pid"]: p for p in host["process_list"]}
    assert (procs[41004]["gpu_instance_id"], procs[41004]["mig_index"]) == (3, 2)
    users = {u["user"]: u for u in json.loads(r.stdout)["users"]}
    assert set(users) == {"alice", "bob", "carol", "dave"} and users["dave"]["processes"] == 2
    text = gputui("snapshot", "--prometheus", prom.url)
    assert "Memory held at 0% util (>= 1 GiB): idle-1 (1 GPU)" in text.stdout
    assert "Users: alice" in text.stdout or "Users: bob" in text.stdout
    rows = [ln.split() for ln in text.stdout.splitlines() if ln.startswith("node-mig")]
    assert rows[-2][:6] == ["node-mig", "0:2", "MIG", "1g.10gb", "GI", "3"]


def _host(data: Any, name: str) -> Any:
    return next(h for h in data.hosts if h.name == name)


def test_the_cluster_view_counts_gpus_not_mig_devices(prom: PrometheusServer) -> None:
    reader = ViewReader(PrometheusSource(prom.url))
    reader.ask(["node-mig"])
    data = reader.poll()
    assert _host(data, "node-mig").gpus == 2
    gpu0 = _host(data.detail, "node-mig").gpus[0]
    assert [(r.gpu_instance_id, r.mig_index) for r in gpu0.mig] == [(1, 0), (2, 1), (3, 2)]


async def test_the_cluster_view_lists_mig_devices_under_their_gpu(prom: PrometheusServer) -> None:
    app = ClusterApp(PrometheusSource(prom.url), interval=1.0)
    async with app.run_test(size=(150, 45)) as pilot:
        await wait_refreshed(app, pilot)
        gpus = app.screen.query_one("#cluster-gpus", SortedTable)
        mine = [k for k in gpus.keys if k.startswith("node-mig")]
        labels = [str(gpus.get_cell(k, "gpu")) for k in mine]
        assert labels == ["0", "0:0", "0:1", "0:2", "1"]
        names = [str(gpus.get_cell(k, "name")) for k in mine]
        assert names[1] == "MIG 3g.40gb GI 1"
        hosts = app.screen.query_one("#cluster-hosts", SortedTable)
        assert column(hosts, "gpus") == ["2"] * 5  # GPUs, not MIG devices


def test_the_cluster_view_shows_users_and_memory_held_at_zero_util(prom: PrometheusServer) -> None:
    data = ViewReader(PrometheusSource(prom.url)).poll()
    users = {u.user: u for u in data.users}
    assert set(users) == {"alice", "bob", "carol", "dave"}
    assert (users["alice"].gpus, users["alice"].hosts) == (4, 4)  # node-a..c GPU 0, node-mig 0
    assert (users["dave"].gpus, users["dave"].hosts, users["dave"].processes) == (1, 1, 2)
    held = {}
    for series in prom.query("gputui_process_gpu_memory_bytes"):
        user = series["metric"]["user"]  # type: ignore[index]
        held[user] = held.get(user, 0.0) + float(series["value"][1])  # type: ignore[index]
    for name, u in users.items():  # within a scrape of the direct sum
        assert abs(u.memory - held[name]) <= 0.05 * held[name] + 2 * GiB, name
    assert [u.user for u in data.users][0] == max(held, key=lambda k: held[k])
    idle = {h.name: h.gpus_idle_held for h in data.hosts}
    assert idle["idle-1"] == 1  # GPU 0: 20,000 MiB at 0 %; GPU 1: 1,000 MiB at 10 %
    assert idle["node-mig"] == 0  # MIG GPUs report no utilisation: never "idle"
    app = ClusterApp(PrometheusSource(prom.url), interval=1.0)
    async_test = _people_text(app)
    import asyncio

    text = asyncio.run(async_test)
    assert "Users: alice" in text or "Users: bob" in text
    assert "Memory held at 0% util (>= 1 GiB): idle-1 (1 GPU)" in text


async def _people_text(app: ClusterApp) -> str:
    from textual.widgets import Static

    async with app.run_test(size=(80, 24)) as pilot:
        await wait_refreshed(app, pilot)
        return str(app.screen.query_one("#cluster-people", Static).content)
