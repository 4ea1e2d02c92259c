"""SVG snapshots of the cluster view from a fixed fleet (no server: the pictures must not move).

Regenerate with `pytest tests/tui/test_cluster_snapshots.py --snapshot-update` and look at them.
"""

from __future__ import annotations

from typing import Any

from textual.pilot import Pilot

from gputui.model.cluster import ClusterGpu, ClusterHost, ClusterSnapshot
from gputui.model.snapshot import DeviceSample, GpuProcess
from gputui.sources.prometheus.api import PrometheusUnreachable
from gputui.tui.cluster_app import ClusterApp

GIB = 1 << 30
T = 1_767_225_600.0


def gpu(host: str, index: int, util: int | None, used: float, *, total: int = 80, temp: int | None = 60,
        power: float | None = 300.0, up: bool = True, name: str = "NVIDIA H100 80GB HBM3") -> ClusterGpu:  # fmt: skip
    sample = None
    if up:
        sample = DeviceSample(
            utilization_gpu=util,
            memory_used=int(used * GIB),
            memory_free=int((total - used) * GIB),
            memory_total=total * GIB,
            temperature_c=temp,
            power_w=power,
        )
    return ClusterGpu(host, index, name, f"GPU-{host}-{index}", None, sample, up, T - 1)


def fleet() -> ClusterSnapshot:
    hosts = (
        ClusterHost(
            "dgx-01",
            tuple(gpu("dgx-01", i, 90 + i, 70.0 + i, temp=70 + i) for i in range(4)),
            state="up", last_seen=T - 1, age_s=1.0, instances=("dgx-01:9400",), exporters=("dcgm",),
        ),
        ClusterHost(
            "gpu-07",
            (
                gpu("gpu-07", 0, 12, 20.5, total=24, power=None, name="NVIDIA GeForce RTX 3090"),
                gpu("gpu-07", 1, None, 0, up=False, name="NVIDIA GeForce RTX 3090"),
            ),
            processes=(
                GpuProcess(0, 4242, "compute", gpu_memory=20 * GIB, sm_util=12, user="alice", name="python"),
            ),
            state="up", last_seen=T - 2, age_s=2.0, instances=("gpu-07:9835",), exporters=("gputui",),
        ),
        ClusterHost(
            "gpu-08",
            (gpu("gpu-08", 0, 0, 1.0, temp=35, power=60.0),),
            state="stale", last_seen=T - 95, age_s=95.0, instances=("gpu-08:9835",), exporters=("gputui",),
        ),
        ClusterHost(
            "gpu-09",
            (gpu("gpu-09", 0, 55, 40.0),),
            state="down", last_seen=T - 400, age_s=400.0, instances=("gpu-09:9835",), exporters=("gputui",),
        ),
    )  # fmt: skip
    return ClusterSnapshot(T, "http://prometheus:9090", hosts)


class FixedSource:
    url = "http://prometheus:9090"

    def __init__(self) -> None:
        self.fail = False

    def poll_cluster(self) -> ClusterSnapshot:
        if self.fail:
            raise PrometheusUnreachable("cannot reach http://prometheus:9090: Connection refused")
        return fleet()

    def history(self, *args: Any, **kwargs: Any) -> dict[tuple[str, int], list[float]]:
        return {
            (h.name, g.index): [float((g.index * 13 + i * 7) % 100) for i in range(40)]
            for h in fleet().hosts
            for g in h.gpus
        }


def make_app(source: FixedSource | None = None) -> ClusterApp:
    # monotonic frozen: host ages count at draw time, and the pictures must not move
    return ClusterApp(source or FixedSource(), interval=3600, clock=lambda: "12:00:00", monotonic=lambda: 0.0)  # type: ignore[arg-type]  # fmt: skip


async def ready(pilot: Pilot[Any]) -> None:
    app = pilot.app
    assert isinstance(app, ClusterApp)
    for _ in range(200):
        if app.refreshes:
            break
        await pilot.pause(0.02)
    await pilot.pause(0.1)


def test_cluster_view_120x32(snap_compare: Any) -> None:
    assert snap_compare(make_app(), terminal_size=(120, 32), run_before=ready)


def test_cluster_host_screen(snap_compare: Any) -> None:
    async def open_host(pilot: Pilot[Any]) -> None:
        await ready(pilot)
        await pilot.press("down", "enter")  # gpu-07: a lost GPU and a process
        await pilot.pause(0.1)

    assert snap_compare(make_app(), terminal_size=(120, 24), run_before=open_host)


def test_cluster_view_prometheus_unreachable(snap_compare: Any) -> None:
    source = FixedSource()
    app = make_app(source)

    async def fail(pilot: Pilot[Any]) -> None:
        await ready(pilot)
        source.fail = True
        app.poller.arm(0.01)
        for _ in range(200):
            if app.last_error:
                break
            await pilot.pause(0.02)
        await pilot.pause(0.1)

    assert snap_compare(app, terminal_size=(120, 24), run_before=fail)


async def test_help_lists_the_cluster_keys_and_no_kill() -> None:
    from gputui.tui.screens.help import HelpScreen

    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(pilot)
        await pilot.press("question_mark")
        await pilot.pause(0.1)
        assert isinstance(app.screen, HelpScreen)
        keys = dict(app.screen.keys)
        assert "enter" in keys and "filter hosts and GPUs" in keys["/"]
        assert not any("kill" in what for what in keys.values())
