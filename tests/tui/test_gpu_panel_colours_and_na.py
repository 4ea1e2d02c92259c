"""The GPU panel: no warning colour at normal load in 16 colours, one N/A per field a GPU
cannot report, and compact memory sizes that keep their decimals."""

from __future__ import annotations

import colorsys
from dataclasses import replace
from typing import Any

from rich.color import ColorSystem

from gputui.model.snapshot import DeviceSnapshot
from gputui.tui.widgets.gpu_panel import GpuPanel
from tests.waiting import wait_for

from .scripted_app import GIB, make_app

# -- no warning colour at normal load with 16 colours ---------------------------------

WARNING_16 = {1, 3, 9, 11}  # red, yellow, bright red, bright yellow


async def test_sparklines_are_not_a_warning_colour_in_16_colours(scripted_source: Any) -> None:
    app = make_app(scripted_source, interval=30.0)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.latest_snapshot is not None)
        panel = app.dashboard.query_one("#gpu-0", GpuPanel)
        for part in ("gpu-panel--spark", "gpu-panel--bar"):
            color = panel.get_component_rich_style(part).color
            assert color is not None
            assert color.downgrade(ColorSystem.STANDARD).number not in WARNING_16, part
        host = app.dashboard.query_one("#host")
        cores = host.get_component_rich_style("host-panel--cores").color
        assert cores is not None and cores.downgrade(ColorSystem.STANDARD).number not in WARNING_16
        # A busy bar stands out from a normal one, but in no warning colour either: not red
        # with 16 colours (TERM=screen), not orange or red with 256.
        hot = panel.get_component_rich_style("gpu-panel--bar-hot").color
        normal = panel.get_component_rich_style("gpu-panel--bar").color
        assert hot is not None and normal is not None
        assert hot.downgrade(ColorSystem.STANDARD).number not in WARNING_16
        assert hot.downgrade(ColorSystem.STANDARD) != normal.downgrade(ColorSystem.STANDARD)
        red, green, blue = hot.downgrade(ColorSystem.EIGHT_BIT).get_truecolor()
        hue = colorsys.rgb_to_hsv(red / 255, green / 255, blue / 255)[0] * 360
        assert 90 < hue < 300, hue  # not in red, orange or yellow


# -- one N/A per field; compact sizes keep their decimals -------------------------------


async def test_unsupported_fields_and_compact_memory(
    scripted_source: Any, snapshot_factory: Any, device_factory: Any
) -> None:
    blind = device_factory(
        0,
        used_gib=None,
        memory_total=None,
        temperature_c=None,
        power_w=None,
        power_limit_w=None,
        pcie_rx_kbs=None,
        pcie_tx_kbs=None,
        performance_state=None,
    )
    blind = replace(blind, info=replace(blind.info, memory_total=None, power_limit_w=None))
    odd = device_factory(1, used_gib=10.0, memory_total=round(79.65 * GIB))
    odd = replace(odd, info=replace(odd.info, memory_total=round(79.65 * GIB)))
    devices: tuple[DeviceSnapshot, ...] = (blind, odd, device_factory(2), device_factory(3))
    scripted_source.next_snapshot = snapshot_factory(n_gpus=4, devices=devices)
    app = make_app(scripted_source, interval=30.0)
    async with app.run_test(size=(160, 40)) as pilot:
        await wait_for(pilot, lambda: app.latest_snapshot is not None)
        await pilot.pause()
        p0 = app.dashboard.query_one("#gpu-0", GpuPanel)
        p1 = app.dashboard.query_one("#gpu-1", GpuPanel)
        assert p0.has_class("compact")
        shown = p0.render().plain
        assert "N/A/N/A" not in shown and "N/A°C" not in shown and "N/AG" not in shown
        assert "temp N/A" in shown and "power N/A" in shown and "PCIe N/A" in shown
        assert p0.mem_value(True) == "N/A"
        assert p1.mem_value(True) in ("10.0/79.6G", "10.0/79.7G")  # not an 80 GiB card's 80G
        p2 = app.dashboard.query_one("#gpu-2", GpuPanel)
        assert p2.mem_value(True).endswith("/24G")
