"""`snapshot --prometheus` text at fleet size: one row per card past 64 GPUs, --all for all."""

from __future__ import annotations

from gputui.commands import snapshot
from gputui.model.cluster import ClusterGpu, ClusterHost, ClusterSnapshot
from gputui.model.snapshot import DeviceSample
from gputui.render import cluster_text
from gputui.render.cluster_text import render_cluster

GIB = 1 << 30


def fleet(hosts: int) -> ClusterSnapshot:
    out = []
    for h in range(hosts):
        name = "NVIDIA A100-SXM4-40GB" if h % 3 == 2 else "NVIDIA H100 80GB HBM3"
        total = 40 if h % 3 == 2 else 80
        gpus = tuple(
            ClusterGpu(
                f"h{h:02d}",
                g,
                name,
                None,
                None,
                DeviceSample(
                    utilization_gpu=50,
                    memory_used=GIB,
                    memory_free=(total - 1) * GIB,
                    memory_total=total * GIB,
                    temperature_c=40,
                    power_w=100.0,
                ),
                True,
                1.0,
            )  # fmt: skip
            for g in range(8)
        )
        out.append(ClusterHost(f"h{h:02d}", gpus, last_seen=1.0, age_s=1.0))
    return ClusterSnapshot(1.0, "http://prom:9090", tuple(out))


def test_a_large_fleet_sums_up_per_card() -> None:
    text = render_cluster(fleet(9))  # 72 GPUs
    lines = text.splitlines()
    assert not any(line.startswith("h00") and " 0  NVIDIA" in line for line in lines)
    assert sum(line.startswith("h0") for line in lines) == 9  # the host table only
    (h100,) = [line for line in lines if line.startswith("NVIDIA H100")]
    assert h100.split()[4:8] == ["48", "6", "0", "50%"]  # GPUs, hosts, lost, mean util
    assert "72 GPUs: `--all` lists every one" in lines


def test_all_lists_every_gpu_and_a_small_fleet_has_its_gpu_table() -> None:
    every = render_cluster(fleet(9), every=True).splitlines()
    assert sum(line.startswith("h0") for line in every) == 9 + 72
    small = render_cluster(fleet(8)).splitlines()  # 64 GPUs: the table as before
    assert sum(line.startswith("h0") for line in small) == 8 + 64
    assert not any("--all" in line for line in small)


def test_the_help_names_the_renderer_bound() -> None:
    assert snapshot.GPU_TABLE_MAX == cluster_text.GPU_TABLE_MAX


def test_the_json_of_a_large_fleet_is_one_host_to_a_line() -> None:
    import json

    from gputui.render.cluster_text import cluster_json_text, cluster_to_dict

    big, small = fleet(9), fleet(8)
    text = cluster_json_text(big)
    assert json.loads(text) == cluster_to_dict(big)
    assert len(text.splitlines()) == 9 + 2
    assert json.loads(cluster_json_text(small)) == cluster_to_dict(small)
    assert cluster_json_text(small) == json.dumps(cluster_to_dict(small), indent=2)
