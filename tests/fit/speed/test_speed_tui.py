"""The fit screen's detail view names each layer's bound and each ranked card's."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from rich.console import Console
from textual.app import App

from gputui.model.snapshot import DeviceInfo, DeviceSample, DeviceSnapshot, Snapshot
from gputui.tui.screens.fit import FitScreen

ROOT = Path(__file__).resolve().parents[3]
GIB = 2**30


def snapshot() -> Snapshot:
    info = DeviceInfo(0, "NVIDIA GeForce RTX 3090", memory_total=24 * GIB, compute_capability="8.6")
    sample = DeviceSample(memory_total=24 * GIB, memory_free=20 * GIB, memory_used=4 * GIB)
    return Snapshot(0.0, "nvml", (DeviceSnapshot(info, sample),))


class Host(App[None]):
    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path

    def on_mount(self) -> None:
        self.push_screen(FitScreen(self.path))


async def settle(pilot: Any, screen: FitScreen) -> None:
    for _ in range(1000):
        await pilot.pause(0.01)
        if not screen.busy and not screen._again and screen.checks:
            return
    raise AssertionError("the fit pass did not finish")


async def test_detail_view_shows_bounds(tmp_path: Path) -> None:
    models = tmp_path / "models.toml"
    shutil.copy(ROOT / "examples" / "models.toml", models)
    shutil.copytree(ROOT / "examples" / "llm", tmp_path / "llm")  # its hf_config files
    app = Host(models)
    async with app.run_test(size=(160, 50)) as pilot:
        screen = app.screen
        assert isinstance(screen, FitScreen)
        screen.update_snapshot(snapshot())
        await settle(pilot, screen)
        vgg = next(c for c in screen.checks if c.model.name == "vgg16")
        console = Console(width=220, record=True)
        console.print(screen.detail(vgg))
        text = console.export_text()
    assert "bound (share of step)" in text
    conv_rows = [line for line in text.splitlines() if "Conv2D" in line]
    assert conv_rows and sum("compute" in line for line in conv_rows) >= len(conv_rows) - 1
    pool_rows = [line for line in text.splitlines() if "MaxPooling2D" in line]
    assert pool_rows and all("memory" in line for line in pool_rows)


async def test_detail_view_says_what_the_speed_assumed(tmp_path: Path) -> None:
    models = tmp_path / "models.toml"
    models.write_text(
        '[[model]]\nname = "cl"\nkind = "sequential"\ninput_shape = [32, 32, 3]\n'
        'memory_format = "channels_last"\noptimizer_impl = "fused"\nlayers = [\n'
        '  { type = "Conv2D", filters = 16, kernel_size = 3 },\n'
        '  { type = "Flatten" },\n  { type = "Dense", units = 10 },\n]\n'
    )
    app = Host(models)
    async with app.run_test(size=(160, 50)) as pilot:
        screen = app.screen
        assert isinstance(screen, FitScreen)
        screen.update_snapshot(snapshot())
        await settle(pilot, screen)
        console = Console(width=220, record=True)
        console.print(screen.detail(screen.checks[0]))
        text = console.export_text()
    assert "speed assumes: NHWC (channels_last), fused optimizer" in text
