"""Regenerate screenshots/*.svg from the simulated scenarios (`make screenshots`).

Every picture comes from a frozen simulated clock, a pre-filled history, a
fixed header clock and host name, so re-running it changes nothing unless the
dashboard itself changed. When `rsvg-convert` is installed, dashboard.svg is
also rendered to dashboard.png.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from textual.pilot import Pilot

from gputui.core.resources import scenarios_dir
from gputui.tui.app import GpuTuiApp
from gputui.tui.demo import demo_app, replay_demo_app
from gputui.tui.screens.alerts import AlertsScreen
from gputui.tui.screens.catalog import CatalogScreen
from gputui.tui.screens.device import DeviceScreen
from gputui.tui.screens.fit import FitScreen
from gputui.tui.screens.help import HelpScreen
from gputui.tui.screens.history import HistoryScreen
from gputui.tui.screens.kill import KillScreen
from gputui.tui.screens.process import ProcessScreen
from gputui.tui.views import fit_pass
from gputui.tui.views.cards import catalog_labels
from gputui.tui.views.kill import KillPolicy
from gputui.tui.widgets.fit_line import FitLine
from gputui.tui.widgets.process_table import ProcessTable

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Scene:
    name: str
    size: tuple[int, int]
    scenario: str | None = None
    fallback_reason: str | None = None
    keys: tuple[str, ...] = ()
    wait_for_screen: type | None = None
    clear_notifications: bool = False
    replay: bool = False  # `gputui replay` on a recording of the scenario (tui/demo.py)


SCENES = (
    Scene("dashboard", (120, 40)),
    Scene("dashboard-80x24", (80, 24)),
    Scene("dashboard-8gpu", (120, 40), scenario="demo-8gpu.toml"),
    # a wide terminal: graphs with a time axis beside the GPU panels
    Scene("dashboard-8gpu-200x50", (200, 50), scenario="demo-8gpu.toml"),
    # 8 GPUs on a laptop terminal: one line per GPU, and process rows under them
    Scene("dashboard-8gpu-80x24", (80, 24), scenario="demo-8gpu.toml"),
    Scene("dashboard-faults", (120, 40), scenario="faults.toml"),
    Scene("nvml-fallback", (100, 30), fallback_reason="NVML Shared Library Not Found"),
    Scene("kill-dialog", (120, 40), keys=("k",), wait_for_screen=KillScreen),
    Scene("help", (120, 40), keys=("question_mark",), wait_for_screen=HelpScreen),
    Scene("process-details", (120, 40), keys=("enter",), wait_for_screen=ProcessScreen),
    # MIG: the process table's GPU column and the panel name a MIG device alike ("0:2")
    Scene("dashboard-mig", (120, 40), scenario="mig.toml"),
    # tab from the process table goes to GPU 0; enter opens its details
    Scene(
        "device-details-mig",
        (130, 45),
        scenario="mig.toml",
        keys=("tab", "enter"),
        wait_for_screen=DeviceScreen,
    ),
    # GPM on an H100: GPU 7 of the 8-GPU node is busy by NVML's count with few SMs active
    # (tab from the process table goes to GPU 0, each tab to the next GPU)
    Scene(
        "device-details-gpm",
        (130, 50),
        scenario="demo-8gpu.toml",
        keys=("tab",) * 8 + ("enter",),
        wait_for_screen=DeviceScreen,
    ),
    Scene("fit", (120, 40), keys=("f",), wait_for_screen=FitScreen),
    Scene("fit-80x24", (80, 24), keys=("f",), wait_for_screen=FitScreen),
    Scene("fit-faults", (120, 40), scenario="faults.toml", keys=("f",), wait_for_screen=FitScreen),
    # a mixed box with a lost GPU: `c` opens on the selected process's GPU (the L4); compare
    # the H100 SXM; `g` wraps round to GPU 0
    Scene(
        "catalog-faults",
        (120, 40),
        scenario="faults.toml",
        keys=("c", "slash", *"H100 SXM", "enter", "enter", "g"),
        wait_for_screen=CatalogScreen,
    ),
    Scene("history", (120, 40), keys=("h",), wait_for_screen=HistoryScreen),
    Scene("history-80x24", (80, 24), keys=("h",), wait_for_screen=HistoryScreen),
    # the faults box: GPU 2 fell off the bus; `a` lists the alerts of the session
    Scene(
        "alerts",
        (120, 30),
        scenario="faults.toml",
        keys=("a",),
        wait_for_screen=AlertsScreen,
        clear_notifications=True,
    ),
    # replay, paused, then `n`: the next alert, marked on the time bar and named above it
    Scene("replay", (120, 40), keys=("n",), replay=True),
)


async def _until(pilot: Pilot[Any], cond: Callable[[], bool], what: str) -> None:
    for _ in range(3000):  # a minute: the fit estimates on a loaded machine
        if cond():
            return
        await pilot.pause(0.02)
    raise RuntimeError(f"timed out waiting for {what}")


async def shoot(scene: Scene, out: Path) -> None:
    path = scenarios_dir() / scene.scenario if scene.scenario else None
    if scene.replay:
        with tempfile.TemporaryDirectory() as folder:
            await _shoot(scene, out, replay_demo_app(Path(folder), path, catalog_labels))
        return
    app: GpuTuiApp = demo_app(
        path,
        fallback_reason=scene.fallback_reason,
        card_lookup=catalog_labels,
        kill_policy=KillPolicy(
            is_root=lambda: True, allow_simulated=True, send_signal=lambda pid, sig: None
        ),
        models_path=ROOT / "examples" / "models.toml",  # not whatever ./gputui.toml holds
    )
    await _shoot(scene, out, app)


async def _shoot(scene: Scene, out: Path, app: GpuTuiApp) -> None:
    async with app.run_test(size=scene.size) as pilot:
        await _until(pilot, lambda: app.latest_snapshot is not None, "the first poll")
        await _until(pilot, lambda: app.cards_matched, "catalog labels")
        table = app.dashboard.query_one(ProcessTable)
        await pilot.pause(0.05)
        await _until(pilot, lambda: table.settled, "process table column widths")
        fit_line = app.dashboard.query_one(FitLine)
        await _until(pilot, lambda: fit_line.passes > 0, "the fit line's estimates")
        await pilot.pause(0.1)
        for key in scene.keys:
            await pilot.press(key)
        if scene.wait_for_screen is not None:
            kind = scene.wait_for_screen
            await _until(pilot, lambda: isinstance(app.screen, kind), kind.__name__)
        screen = app.screen
        if isinstance(screen, FitScreen):
            await _until(
                pilot,
                lambda: (
                    screen.passes > 0
                    and not screen.busy
                    and all(m.name in screen.result.rankings for m in screen.models)
                ),
                "the fit estimates",
            )
        if scene.clear_notifications:
            app.clear_notifications()
        await pilot.pause(0.2)
        await pilot.wait_for_scheduled_animations()
        app.save_screenshot(filename=out.name, path=str(out.parent))


def to_png(svg: Path, png: Path) -> bool:
    """rsvg collapses runs of spaces unless told to preserve them; Textual's SVG relies on them."""
    rsvg = shutil.which("rsvg-convert")
    if rsvg is None:
        return False
    text = svg.read_text(encoding="utf-8").replace("<svg ", '<svg xml:space="preserve" ', 1)
    subprocess.run([rsvg, "-w", "1600", "-o", str(png)], input=text.encode(), check=True)
    return True


def main(argv: list[str] | None = None) -> int:
    # Alert times are shown in local time: the pictures use UTC wherever they are made.
    os.environ["TZ"] = "UTC"
    time.tzset()
    # The pictures must not depend on how fast this machine is: no fit pass is cut short.
    fit_pass.ESTIMATE_BUDGET_S = 600.0
    # The replay's time bar shows local times: the same on every machine.
    os.environ["TZ"] = "UTC"
    time.tzset()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "screenshots")
    parser.add_argument("--only", nargs="*", help="scene names to render (default: all)")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    wanted = set(args.only or [s.name for s in SCENES])
    for scene in SCENES:
        if scene.name not in wanted:
            continue
        target = args.out / f"{scene.name}.svg"
        asyncio.run(shoot(scene, target))
        print(f"wrote {target.relative_to(ROOT) if target.is_relative_to(ROOT) else target}")
    if "dashboard" in wanted:
        png = args.out / "dashboard.png"
        if to_png(args.out / "dashboard.svg", png):
            print(f"wrote {png.relative_to(ROOT) if png.is_relative_to(ROOT) else png}")
        else:
            print("rsvg-convert not found: skipped dashboard.png", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
