"""The report's plots (plotext): one per metric, colour only when asked, unknown said."""

from __future__ import annotations

import pytest

from gputui.usage.summary import summarise
from tests.usage.runs import T0, device, snap

pytest.importorskip("plotext")

from gputui.usage.plots import render_plots  # noqa: E402


def test_each_metric_is_drawn_and_an_unknown_one_is_said() -> None:
    run = summarise(
        snap(T0 + i, (device(utilization_gpu=i, temperature_c=None), device(1))) for i in range(60)
    )
    text = render_plots(run, width=60, height=10)
    for title in ("Utilisation %", "Memory used GiB", "Power W"):
        assert title in text
    assert "Temperature °C: unknown for every GPU" in text
    assert "GPU 0" in text and "GPU 1" in text and "\x1b" not in text
    assert "\x1b[" in render_plots(run, width=60, height=10, color=True)
