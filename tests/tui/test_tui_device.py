"""Device facts and MIG in the dashboard, as a user meets them: tab to a GPU, enter, read, escape.

Expected values come from the snapshot the source handed out, never from the
widgets' previous output.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import Static

from gputui.core.resources import scenarios_dir
from gputui.model.snapshot import DeviceSample, DeviceSnapshot, MigDevice
from gputui.sources.simulated.source import SimulatedSource
from gputui.tui.app import GpuTuiApp
from gputui.tui.screens.device import DeviceScreen
from gputui.tui.views.device_facts import device_facts, energy, mig_line, pcie_link, subtitle
from gputui.tui.widgets.fit_line import FitLine
from gputui.tui.widgets.gpu_panel import GpuPanel
from tests.waiting import wait_for

from .conftest import make_app

GIB = 1024**3
MIB = 1024**2


def _render_plain(app: GpuTuiApp, widget: Static) -> str:
    """What a Static shows, laid out as plain text (a Rich Table needs a console to render)."""
    from rich.console import Console

    console = Console(width=200, record=True, color_system=None)
    console.print(widget.content)
    return console.export_text()


def _with_facts(dev: DeviceSnapshot, **sample: Any) -> DeviceSnapshot:
    s = dev.sample or DeviceSample()
    return replace(dev, sample=replace(s, **sample))


async def _focus_gpu(pilot: Pilot[Any], app: GpuTuiApp, index: int) -> GpuPanel:
    panel = app.dashboard.query_one(f"#gpu-{index}", GpuPanel)
    for _ in range(8):
        if app.focused is panel:
            return panel
        await pilot.press("tab")
    raise AssertionError(f"tab never reached GPU {index}")


async def test_enter_on_a_gpu_opens_its_facts_and_escape_closes(
    scripted_source: Any, snapshot_factory: Any, device_factory: Any
) -> None:
    d0 = _with_facts(
        device_factory(0),
        persistence_mode=False,
        display_active=True,
        compute_mode="exclusive_process",
        pcie_gen=3,
        pcie_width=16,
        bar1_used=5 * MIB,
        energy_j=7_200_000.0,
        encoder_util=12,
        decoder_util=None,
    )
    d0 = replace(
        d0,
        info=replace(
            d0.info,
            pci_bus_id="00000000:01:00.0",
            pcie_max_gen=4,
            pcie_max_width=16,
            bar1_total=256 * MIB,
            ecc_mode=None,
            power_min_limit_w=100.0,
            power_max_limit_w=400.0,
        ),
    )
    scripted_source.next_snapshot = snapshot_factory(devices=(d0, device_factory(1)))
    app = make_app(scripted_source)
    async with app.run_test(size=(130, 45)) as pilot:
        await wait_for(pilot, lambda: app.latest_snapshot is not None)
        await _focus_gpu(pilot, app, 0)
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, DeviceScreen))
        screen = app.screen
        assert isinstance(screen, DeviceScreen) and screen.device.index == 0
        text = _render_plain(app, screen.query_one("#device-facts", Static))
        assert "00000000:01:00.0" in text
        assert "persistence mode" in text and "display active" in text
        assert "exclusive process" in text
        assert "Gen 3 x16" in text and "Gen 4 x16" in text
        assert "5 MiB / 256 MiB" in text
        assert "7.20 MJ (2.00 kWh)" in text
        assert "100 W to 400 W" in text
        rows = dict(device_facts(screen.device))
        assert rows["decoder"] == "N/A" and rows["encoder"] == "12%"
        assert rows["ECC mode"] == "N/A"  # not supported: N/A, never "disabled"
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is app.dashboard)


async def test_the_details_view_follows_the_polls(
    scripted_source: Any, snapshot_factory: Any, device_factory: Any
) -> None:
    first = _with_facts(device_factory(0), pcie_gen=1, energy_j=1000.0)
    scripted_source.next_snapshot = snapshot_factory(devices=(first, device_factory(1)))
    app = make_app(scripted_source)
    async with app.run_test(size=(130, 45)) as pilot:
        await wait_for(pilot, lambda: app.latest_snapshot is not None)
        await _focus_gpu(pilot, app, 0)
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, DeviceScreen))
        later = _with_facts(device_factory(0), pcie_gen=4, energy_j=5000.0)
        scripted_source.next_snapshot = snapshot_factory(devices=(later, device_factory(1)))
        screen = app.screen
        assert isinstance(screen, DeviceScreen)
        await wait_for(
            pilot, lambda: screen.device.sample is not None and screen.device.sample.pcie_gen == 4
        )
        text = _render_plain(app, screen.query_one("#device-facts", Static))
        assert "Gen 4" in text and "5.0 kJ" in text


async def test_a_click_on_a_gpu_opens_its_details(
    scripted_source: Any, snapshot_factory: Any
) -> None:
    app = make_app(scripted_source)
    async with app.run_test(size=(130, 45)) as pilot:
        await wait_for(pilot, lambda: app.latest_snapshot is not None)
        panel = app.dashboard.query_one("#gpu-1", GpuPanel)
        await wait_for(pilot, lambda: panel.outer_size.height >= 5 and panel.region.y > 5)
        await pilot.click("#gpu-1", offset=(4, 2))
        await wait_for(pilot, lambda: isinstance(app.screen, DeviceScreen))
        assert isinstance(app.screen, DeviceScreen) and app.screen.device.index == 1


async def test_mig_devices_under_their_gpu_in_panel_and_details() -> None:
    source = SimulatedSource.from_scenario(scenarios_dir() / "mig.toml", clock=lambda: 120.0)
    expected = source.snapshot_at(120.0)
    app = make_app(source)
    async with app.run_test(size=(130, 45)) as pilot:
        await wait_for(pilot, lambda: app.latest_snapshot is not None)
        panel = app.dashboard.query_one("#gpu-0", GpuPanel)
        await wait_for(pilot, lambda: panel.size.height > 3)
        migs = expected.devices[0].mig_devices
        drawn = panel.render().plain
        for m in migs:
            assert mig_line(0, m) in drawn
        assert panel.mig_text().count("\n") == len(migs) - 1
        assert app.dashboard.query_one("#gpu-1", GpuPanel).mig_text() == ""
        assert "MIG" in str(panel.border_subtitle)
        # the height follows: util, memory, the stats lines and one line per MIG device
        stats_lines = len(panel.stats_text().split("\n"))
        assert panel.size.height == 2 + stats_lines + len(migs)
        await _focus_gpu(pilot, app, 0)
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, DeviceScreen))
        mig = _render_plain(app, app.screen.query_one("#device-mig", Static))
        assert "MIG devices (3)" in mig
        for m in migs:
            assert m.uuid is not None and m.uuid in mig
        assert "PIDs 41001 41002" in mig and "PIDs 41003" in mig and "PIDs 41004" in mig
        assert "  └ MIG-" in mig


# --- the formatting rules, directly ---------------------------------------------------------


@pytest.mark.parametrize(
    ("gen", "width", "text"),
    [(4, 16, "Gen 4 x16"), (None, 16, "Gen N/A x16"), (3, None, "Gen 3 xN/A"), (None, None, "N/A")],
)
def test_pcie_link_text(gen: int | None, width: int | None, text: str) -> None:
    assert pcie_link(gen, width) == text


@pytest.mark.parametrize(
    ("joules", "text"),
    [
        (None, "N/A"),
        (0.0, "0 J"),
        (999.0, "999 J"),
        (4500.0, "4.5 kJ"),
        (3.6e6, "3.60 MJ (1.00 kWh)"),
        (4.6579e10, "46.58 GJ (12,939 kWh)"),
    ],
)
def test_energy_text(joules: float | None, text: str) -> None:
    assert energy(joules) == text


def test_unsupported_facts_read_na_never_zero_or_off(device_factory: Any) -> None:
    dev = device_factory(0)  # the factory leaves every new fact None
    rows = dict(device_facts(dev))
    for label in (
        "persistence mode",
        "display active",
        "compute mode",
        "PCIe link now",
        "PCIe link max",
        "BAR1",
        "energy since driver load",
        "ECC mode",
        "MIG mode",
        "power limit default",
        "power limit range",
    ):
        assert rows[label] == "N/A", label
    assert "N/A" in subtitle(dev) and "0%" not in subtitle(dev)


def test_mig_line_counts_processes_of_its_instance(process_factory: Any) -> None:
    m = MigDevice(
        index=1,
        gpu_instance_id=2,
        compute_instance_id=0,
        profile="2g.20gb",
        memory_total=20 * GIB,
        memory_used=5 * GIB,
    )
    procs = [
        process_factory(0, 1, gpu_instance_id=2),
        process_factory(0, 2, gpu_instance_id=1),
        process_factory(0, 3),
    ]
    line = mig_line(0, m, procs)
    assert line.startswith("MIG 0:1 2g.20gb  GI 2/CI 0") and line.endswith("1 proc")
    assert "mem 5.0/20.0 GiB" in mig_line(0, m) and "util N/A" in mig_line(0, m)
    assert "proc" not in mig_line(0, m)


# --- snapshot of the details view (MIG scenario, frozen clock) -------------------------------


def test_device_details_mig_130x45(snap_compare: Any) -> None:
    from gputui.tui.demo import demo_app

    async def open_details(pilot: Pilot[Any]) -> None:
        app = pilot.app
        assert isinstance(app, GpuTuiApp)
        await wait_for(pilot, lambda: app.latest_snapshot is not None)
        # the dashboard shows through the dialog: its fit line must have its first verdicts
        fit_line = app.dashboard.query_one(FitLine)
        await wait_for(pilot, lambda: fit_line.passes > 0)
        await _focus_gpu(pilot, app, 0)
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, DeviceScreen))
        await pilot.pause(0.2)

    examples = Path(__file__).resolve().parents[2] / "examples" / "models.toml"
    app = demo_app(scenarios_dir() / "mig.toml", card_lookup=None, models_path=examples)
    assert snap_compare(app, terminal_size=(130, 45), run_before=open_details)
