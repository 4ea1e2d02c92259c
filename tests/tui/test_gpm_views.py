"""GPM in the dashboard: shown beside utilization where a GPU has it, nothing where it has
not, and the disagreement ("busy, SMs mostly idle") said in words."""

from __future__ import annotations

import pytest
from demo_driving import app_for, ready

from gputui.history.metrics import History
from gputui.model.gpm import sms_mostly_idle
from gputui.model.record import replace
from gputui.model.snapshot import DeviceInfo, DeviceSample, DeviceSnapshot, MigDevice, Snapshot
from gputui.tui.views.device_facts import device_facts, mig_line
from gputui.tui.widgets.gpu_panel import GpuPanel, stats_line

GPM = {"sm_active_pct": 29.2, "sm_occupancy_pct": 10.3, "tensor_active_pct": 8.3,
       "dram_active_pct": 14.1}


def _dev(util: int, gpm: bool) -> DeviceSnapshot:
    sample = DeviceSample(utilization_gpu=util, memory_used=1 << 30, memory_total=80 << 30,
                          temperature_c=50, power_w=300.0)
    if gpm:
        sample = replace(sample, **GPM)
    info = DeviceInfo(index=0, name="NVIDIA H100 80GB HBM3", compute_capability="9.0")
    return DeviceSnapshot(info=info, sample=sample)


@pytest.mark.parametrize(
    ("util", "sms", "disagree"),
    [(99, 29.2, True), (80, 39.9, True), (80, 40.0, False), (79, 5.0, False),
     (100, 91.0, False), (None, 10.0, False), (99, None, False)],
)
def test_the_rule_for_busy_but_sms_mostly_idle(
    util: int | None, sms: float | None, disagree: bool
) -> None:
    assert sms_mostly_idle(util, sms) is disagree


def test_the_panel_says_busy_and_sms_and_shows_gpm_only_where_it_is() -> None:
    full = stats_line(_dev(99, gpm=True), compact=False).plain
    assert "SMs active 29%  occupancy 10%  tensor 8%  DRAM 14%" in full
    assert "busy 99%, SMs 29%" in full
    assert "SMs 29%" in stats_line(_dev(99, gpm=True), compact=True).plain
    calm = stats_line(_dev(50, gpm=True), compact=False).plain
    assert "SMs active 29%" in calm and "busy" not in calm
    for compact in (False, True):
        plain = stats_line(_dev(99, gpm=False), compact=compact).plain
        assert "SMs" not in plain and "busy" not in plain  # no GPM: nothing, not N/A


def test_details_and_mig_lines() -> None:
    rows = dict(device_facts(_dev(99, gpm=True)))
    assert rows["SMs active (GPM)"] == "29%" and rows["DRAM active (GPM)"] == "14%"
    assert "busy vs SMs" in rows
    assert not any("GPM" in label for label, _ in device_facts(_dev(99, gpm=False)))
    mig = MigDevice(index=0, gpu_instance_id=1, profile="1g.20gb", sm_active_pct=12.0)
    assert "SMs 12%" in mig_line(0, mig)
    assert "SMs" not in mig_line(0, replace(mig, sm_active_pct=None))


def test_history_keeps_sms_active_for_gpm_gpus_only() -> None:
    history = History(maxlen=10)
    both = (replace(_dev(99, gpm=True), info=DeviceInfo(index=0, name="H100")),
            replace(_dev(99, gpm=False), info=DeviceInfo(index=1, name="A100")))
    for t in range(3):
        history.add(Snapshot(timestamp=float(t), source="simulated", devices=both))
    assert history.series(0, "sm_active") == [29.2, 29.2, 29.2]
    assert history.series(1, "sm_active") == []


async def test_the_dashboard_flags_the_busy_but_idle_gpu() -> None:
    app = app_for("demo-8gpu.toml")
    async with app.run_test(size=(200, 60)) as pilot:
        await ready(pilot, fit=False)
        panels = {p.index: p for p in app.dashboard.query(GpuPanel)}
        assert "busy" in panels[7].stats_text() and "SMs" in panels[7].stats_text()
        assert "busy" not in panels[0].stats_text() and "SMs" in panels[0].stats_text()
