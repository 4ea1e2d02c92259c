"""The report's text: unknown is N/A, a figure that misses part of the time says so."""

from __future__ import annotations

from gputui.usage.report_text import render_text
from gputui.usage.summary import summarise
from tests.usage.runs import T0, device, process, snap


def test_energy_with_a_gap_or_an_unsplit_interval_is_a_floor() -> None:
    times = [0, 1, 2, 60, 61]
    snaps = [
        snap(
            T0 + t,
            (device(power_w=360.0),),
            process(1, T0 + t, sm_util=None if t == 60 else 50),
            process(2, T0 + t, sm_util=50, gpu_memory=None),
        )
        for t in times
    ]
    text = render_text(summarise(snaps))
    gpu_row = next(line for line in text.splitlines() if line.startswith("0 "))
    assert "≥0.30" in gpu_row  # 3 s of 360 W; 58 s of gap not counted
    assert "GPU 0: energy covers 3 s; not counted: 58 s in gaps, 0 s with power unknown" in text
    rows = [line for line in text.splitlines() if line.startswith(("1 ", "2 "))]
    assert all("≥0.10 (sm)" in row for row in rows), rows  # 60 -> 61 could not be split


def test_unknowns_are_na() -> None:
    snaps = [
        snap(
            T0 + i,
            (device(power_w=None, utilization_gpu=None),),
            process(3, T0 + i, sm_util=None, gpu_memory=None),
        )
        for i in range(3)
    ]
    text = render_text(summarise(snaps))
    gpu_row = next(line for line in text.splitlines() if line.startswith("0 "))
    assert gpu_row.split()[5:8] == ["N/A", "10.0/80.0", "N/A"]
    proc_row = next(line for line in text.splitlines() if line.startswith("3 "))
    assert proc_row.count("N/A") == 3  # peak, SM % mean, energy
