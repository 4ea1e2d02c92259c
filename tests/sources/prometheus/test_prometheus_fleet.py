"""The Prometheus reader, `snapshot --prometheus` and `fit --prometheus` against a real Prometheus.

Needs Debian's `prometheus` binary (CI installs it in .ci/run); skipped with the
reason when it is missing. The fleet is shared by the session (conftest.py).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gputui.sources.prometheus.source import PrometheusSource
from tests.fleet import Fleet
from tests.prometheus_harness import PROMETHEUS

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(PROMETHEUS is None, reason="needs the prometheus binary (apt install prometheus)"),
]



def gputui(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gputui", *args], capture_output=True, text=True, timeout=60
    )


def test_snapshot_json_shows_every_host_in_both_label_spellings(fleet: Fleet) -> None:
    result = gputui("snapshot", "--prometheus", fleet.prom.url, "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    hosts = {h["host"]: h for h in data["hosts"]}
    assert set(hosts) == {"dgx-1", "dgx-2", "node-a", "node-b"}
    # dcgm-exporter 4.x spelling: lowercase hostname and uuid
    dgx1 = hosts["dgx-1"]
    assert dgx1["gpus"] == 4 and dgx1["exporters"] == ["dcgm"]
    assert all(d["info"]["uuid"].startswith("GPU-") for d in dgx1["devices"])
    # a mix: node-a through gputui and dcgm-exporter is one host with its two GPUs
    node_a = hosts["node-a"]
    assert node_a["exporters"] == ["dcgm", "gputui"] and node_a["gpus"] == 2
    assert node_a["simulated"] is True
    assert {p["pid"] for p in node_a["process_list"]} == {4242, 5151}
    assert all(p["cmdline"] is None for p in node_a["process_list"])  # not exported by default
    assert all(h["state"] == "up" for h in hosts.values())


def test_nan_missing_metric_and_duplicate_series(fleet: Fleet) -> None:
    cluster = PrometheusSource(fleet.prom.url).poll_cluster()
    hosts = {h.name: h for h in cluster.hosts}
    dgx2 = hosts["dgx-2"]
    assert [g.index for g in dgx2.gpus] == [0, 1]  # the duplicated series is still one GPU
    for g in dgx2.gpus:
        assert g.sample is not None
        assert g.sample.temperature_c is None  # NaN is "not available", never a number
        assert g.sample.power_w is None  # the metric is missing for this host only
        assert g.sample.memory_free is not None
    assert all(g.sample is not None and g.sample.power_w is not None for g in hosts["dgx-1"].gpus)


def test_query_count_does_not_grow_with_hosts(fleet: Fleet) -> None:
    everyone = PrometheusSource(fleet.prom.url)
    one = PrometheusSource(fleet.prom.url, match='Hostname="node-b"')
    first_all, first_one = everyone.poll_cluster(), one.poll_cluster()
    assert {h.name for h in first_one.hosts} == {"node-b"}
    assert len(first_all.hosts) == 4
    # one query per metric + identity/freshness + labelled extras + up (+ the targets API once)
    per_refresh = len(everyone.metrics) + 1 + 3
    assert first_all.requests == first_one.requests == per_refresh + 1
    assert everyone.poll_cluster().requests == one.poll_cluster().requests == per_refresh


def test_snapshot_text_table(fleet: Fleet) -> None:
    result = gputui("snapshot", "--prometheus", fleet.prom.url)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert "4 hosts" in lines[0] and "10 GPUs" in lines[0]
    host_lines = {line.split()[0]: line for line in lines[2:6]}
    assert set(host_lines) == {"dgx-1", "dgx-2", "node-a", "node-b"}
    assert "SIMULATED" in host_lines["node-a"] and "SIMULATED" not in host_lines["dgx-1"]


def test_fit_ranks_the_clusters_gpus_by_what_fits_now(fleet: Fleet, tmp_path: Path) -> None:
    models = tmp_path / "models.toml"
    models.write_text(
        """
[[model]]
name = "wide-mlp"
kind = "sequential"
input_shape = [8192]
batch_size = 4096
mode = "train"
layers = [
  { type = "Dense", units = 16384 },
  { type = "Dense", units = 16384 },
  { type = "Dense", units = 10 },
]
"""
    )
    result = gputui("fit", str(models), "--prometheus", fleet.prom.url, "--json")
    assert result.returncode in (0, 1), result.stderr
    data = json.loads(result.stdout)
    gpus = data["fleet"][0]["gpus"]
    assert len(gpus) == 10
    where = [(g["host"], g["gpu"]) for g in gpus]
    assert len(set(where)) == 10
    # ranked: fitting GPUs first, then by the batch that fits in free memory now
    keys = [(not g["fits"], -g["max_batch_size_free"]) for g in gpus]
    assert keys == sorted(keys)
    # free memory is what dcgm reported: dgx-1 GPU 0 has 1000 MiB x 0 used of 81559
    dgx1_0 = next(g for g in gpus if g["host"] == "dgx-1" and g["gpu"] == 0)
    assert dgx1_0["memory_free"] == 81559 * 2**20
    text = gputui("fit", str(models), "--prometheus", fleet.prom.url)
    assert "wide-mlp" in text.stdout and "dgx-1 GPU 0" in text.stdout


def test_bad_selector_is_one_line_exit_2(fleet: Fleet) -> None:
    result = gputui("snapshot", "--prometheus", fleet.prom.url, "--match", 'job=~"("')
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("gputui: --match")
    assert "Traceback" not in result.stderr


def test_not_a_prometheus_url_is_one_line_exit_2(fleet: Fleet) -> None:
    exporter = fleet.exporters["node-b"].url.rsplit("/", 1)[0]
    result = gputui("snapshot", "--prometheus", exporter)
    assert result.returncode == 2 and result.stderr.count("\n") == 1, result.stderr
