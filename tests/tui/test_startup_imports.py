"""What the dashboard imports on its way to the first frame, and with no models configured.

Structural, not timed: each check runs in a fresh interpreter and reads sys.modules.
The screens not shown at start, the fit engine, the catalog and pydantic are
imported when first needed (a key, the fit line's pass over a models file, the
card labels after the first frame), never by the dashboard's start-up itself.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import gputui

SRC = Path(gputui.__file__).resolve().parents[1]

# Opened by a key, never by start-up.
HIDDEN_SCREENS = tuple(
    f"gputui.tui.screens.{name}"
    for name in (
        "catalog",
        "cluster",
        "device",
        "fit",
        "help",
        "history",
        "kill",
        "open_models",
        "process",
    )
)
# The fit engine: the fit line imports it only to judge a models file of the user's.
FIT_ENGINE = (
    "gputui.fit.entry",
    "gputui.fit.graph",
    "gputui.fit.transformer",
    "gputui.fit.report",
    "gputui.fit.importers",
    "gputui.tui.views.fit_pass",
)


def _run(code: str, tmp_path: Path, **kw: object) -> list[str]:
    """The gputui/pydantic modules a fresh interpreter holds after `code` (which prints them)."""
    env = {
        **os.environ,
        "PYTHONPATH": str(SRC),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),  # no saved settings, no models file
        "GPUTUI_CACHE_DIR": str(tmp_path / "cache"),
    }
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=300,
        check=False,
        **kw,  # type: ignore[arg-type]
    )
    assert done.returncode == 0, done.stderr
    return list(json.loads(done.stdout.strip().splitlines()[-1]))


PRINT_MODULES = """
import json, sys
print(json.dumps(sorted(m for m in sys.modules if m.startswith(("gputui", "pydantic")))))
"""


def _under(modules: list[str], prefixes: tuple[str, ...]) -> list[str]:
    return [m for m in modules if m.startswith(prefixes)]


def test_dashboard_modules_import_no_hidden_screen_fit_engine_or_catalog(tmp_path: Path) -> None:
    modules = _run(
        "import gputui.commands.tui, gputui.tui.app, gputui.tui.run\n" + PRINT_MODULES, tmp_path
    )
    assert "gputui.tui.app" in modules  # the check saw the dashboard's modules
    assert _under(modules, HIDDEN_SCREENS) == []
    assert _under(modules, FIT_ENGINE) == []
    assert _under(modules, ("gputui.catalog", "pydantic")) == []


def test_command_line_path_loads_no_catalog_before_the_dashboard(tmp_path: Path) -> None:
    """`gputui --demo` up to the dashboard's start (run_dashboard, stubbed: no UI here)."""
    code = (
        "import json, os, pty, sys\n"
        "import gputui.tui.run as run\n"
        "seen = []\n"
        "def stub(source, **kw):\n"
        "    seen.extend(m for m in sys.modules if m.startswith(('gputui', 'pydantic')))\n"
        "    first = kw.get('first_poll')\n"
        "    if first is not None:\n"
        "        first.wait(60)\n"
        "    return 0\n"
        "run.run_dashboard = stub\n"
        "master, slave = pty.openpty()\n"  # the dashboard insists on a terminal
        "saved = os.dup(1)\n"
        "os.dup2(slave, 0); os.dup2(slave, 1)\n"
        "sys.stdin = open(0, closefd=False); sys.stdout = open(1, 'w', closefd=False)\n"
        "from gputui.cli import main\n"
        "code = main(['--demo'])\n"
        "sys.stdout.flush(); os.dup2(saved, 1); sys.stdout = open(1, 'w', closefd=False)\n"
        "assert code == 0, code\n"
        "print(json.dumps(sorted(set(seen))))\n"
    )
    modules = _run(code, tmp_path)
    assert "gputui.commands.tui" in modules
    assert _under(modules, ("gputui.catalog", "pydantic")) == []
    assert _under(modules, FIT_ENGINE) == []


def test_no_models_configured_never_loads_the_fit_engine(tmp_path: Path) -> None:
    """The running dashboard, first frame to the fit line's answer and the card labels
    (the catalog cache warm, as on any run after the first)."""
    _run("from gputui.catalog import load_catalog; load_catalog()\n" + PRINT_MODULES, tmp_path)
    code = """
import asyncio, json, sys
from gputui.core.resources import scenarios_dir
from gputui.sources.simulated.source import SimulatedSource
from gputui.tui.app import GpuTuiApp
from gputui.tui.widgets.fit_line import FitLine

def mods():
    return sorted(m for m in sys.modules if m.startswith(("gputui", "pydantic")))

async def main():
    source = SimulatedSource.from_scenario(scenarios_dir() / "demo-8gpu.toml", clock=lambda: 600.0)
    app = GpuTuiApp(source, interval=30.0)
    async with app.run_test(size=(120, 40)) as pilot:
        line = app.dashboard.query_one(FitLine)
        for _ in range(6000):
            if app.cards_matched and line.passes:
                break
            await pilot.pause(0.02)
        assert app.cards_matched and line.passes, "no fit line answer or card labels"
        assert "no models configured" in line.render().plain, line.render().plain
        return mods()

print(json.dumps(asyncio.run(main())))
"""
    modules = _run(code, tmp_path)
    assert "gputui.catalog" in modules  # the card labels did load it, after the first frame
    assert _under(modules, FIT_ENGINE) == []
    assert _under(modules, ("pydantic",)) == []
