"""Strings from other people reach the terminal shown, never obeyed.

A real process whose executable name and arguments hold every C0 and C1
control character and Rich markup, and a GPU whose NVML strings do the same,
go through the real boundary (NvmlSource with the fake pynvml, the real
HostSampler with psutil) and then through every output path: `gputui
snapshot` as text and as JSON, and the dashboard's GPU panel, process table,
details line, details dialog and kill dialog. None may emit a control
character, and `[red]x` must stay literal text (not turn red).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gputui.commands import snapshot as snapshot_command
from gputui.core.textsafe import is_visible
from gputui.model.snapshot import Snapshot
from gputui.render.snapshot_text import render
from gputui.sources.nvml.source import NvmlSource

GiB = 1024**3

C0 = "".join(chr(c) for c in range(0x01, 0x20))  # NUL cannot be in argv or a file name
C1 = "".join(chr(c) for c in range(0x80, 0xA0))
MARKUP = "[red]x[/red] [bold]b[/] [link=http://e.invalid]l[/link]"
HOSTILE = "\x1b]0;owned\x07\x1b[2J" + C0 + "\x7f" + C1 + "\u202e\u2028" + MARKUP
EXE_NAME = "\x1b]0;pwn\x07[red]x"  # 14 bytes: the kernel keeps 15 of the name


@pytest.fixture
def hostile_process(tmp_path: Path) -> Iterator[subprocess.Popen[bytes]]:
    """A sleeper started through a symlink with a hostile name, hostile argument included."""
    exe = tmp_path / EXE_NAME
    exe.symlink_to(sys.executable)
    child = subprocess.Popen(
        [str(exe), "-c", "import sys, time; print(flush=True); time.sleep(60)", HOSTILE],
        stdout=subprocess.PIPE,
    )
    assert child.stdout is not None
    child.stdout.readline()  # exec'd and running: /proc shows its own command line now
    yield child
    child.kill()
    child.wait(timeout=10)


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _strings(k)
            yield from _strings(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _strings(v)


def _lines_visible(text: str) -> None:
    for line in text.split("\n"):
        assert is_visible(line), repr(line)


@pytest.fixture
def poisoned(fake_nvml: Any, hostile_process: subprocess.Popen[bytes]) -> Snapshot:
    gpu = fake_nvml.gpus[0]
    gpu.name = "\x00" + HOSTILE
    gpu.uuid = "GPU-\x1b[2J"
    gpu.compute = [(hostile_process.pid, 2 * GiB)]
    gpu.graphics = []
    gpu.util_samples = []
    fake_nvml.driver_version = "550\x1b]0;t\x07"
    fake_nvml.nvml_version = "12\x9b31m"
    source = NvmlSource.open(with_host=True)
    try:
        return source.poll()
    finally:
        source.close()


def test_the_boundary_makes_every_outside_string_visible(
    poisoned: Snapshot, hostile_process: subprocess.Popen[bytes]
) -> None:
    proc = next(p for p in poisoned.processes if p.pid == hostile_process.pid)
    assert proc.host_visible and proc.cmdline is not None and proc.name is not None
    for text in _strings([proc.user, proc.name, list(proc.cmdline), proc.container]):
        assert is_visible(text), repr(text)
    assert proc.cmdline[-1].startswith("^[]0;owned^G^[[2J^A^B")  # shown, in caret notation
    assert "\\x9b" in proc.cmdline[-1] and MARKUP in proc.cmdline[-1]
    assert proc.name.startswith("^[]0;pwn^G")
    dev = poisoned.devices[0].info
    for text in (dev.name, dev.uuid or "", poisoned.driver_version or "", poisoned.nvml_version):
        assert is_visible(text or ""), repr(text)
    assert dev.name.startswith("^@^[]0;owned")


def test_snapshot_command_text_and_json_are_free_of_control_characters(
    poisoned: Snapshot, fake_nvml: Any, hostile_process: subprocess.Popen[bytes], capsys: Any
) -> None:
    _lines_visible(render(poisoned, color=False))
    args = argparse.Namespace(json=False, json_schema=False, demo=False, scenario=None)
    assert snapshot_command.run(args) == 0
    text = capsys.readouterr().out
    _lines_visible(text)
    assert MARKUP in text and str(hostile_process.pid) in text

    args.json = True
    assert snapshot_command.run(args) == 0
    doc = json.loads(capsys.readouterr().out)
    strings = list(_strings(doc))
    assert any(MARKUP in s for s in strings)
    for s in strings:
        assert is_visible(s), repr(s)


class _Fixed:
    name = "nvml"

    def __init__(self, snap: Snapshot) -> None:
        self.snap = snap

    def poll(self) -> Snapshot:
        return self.snap

    def close(self) -> None:
        pass


def _screen_text(app: Any) -> str:
    return "\n".join(strip.text for strip in app.screen._compositor.render_strips())


async def test_dashboard_shows_hostile_strings_literally(
    poisoned: Snapshot, hostile_process: subprocess.Popen[bytes]
) -> None:
    from gputui.tui.app import GpuTuiApp
    from gputui.tui.screens.kill import KillScreen
    from gputui.tui.screens.process import ProcessScreen
    from gputui.tui.widgets.process_table import ProcessTable

    # Fresh timestamp so the kill dialog's identity check accepts the listed process.
    live = dataclasses.replace(poisoned, timestamp=time.time())
    app = GpuTuiApp(_Fixed(live), interval=30.0, clock=lambda: "01:02:03", card_lookup=None)
    async with app.run_test(size=(200, 50)) as pilot:
        table = app.dashboard.query_one(ProcessTable)
        for _ in range(100):
            if table.row_count:
                break
            await pilot.pause(0.02)
        key = f"0:{hostile_process.pid}"
        assert key in table.processes
        while table.selected is None or table.selected.pid != hostile_process.pid:
            await pilot.press("down")
        await pilot.pause()
        dashboard = _screen_text(app)
        _lines_visible(dashboard)
        assert "^[]0;owned" in dashboard  # the GPU's name, in its panel's title
        assert "[red]x" in dashboard  # markup stayed literal (table, details, panel title)

        await pilot.press("enter")
        assert isinstance(app.screen, ProcessScreen)
        await pilot.pause()
        dialog = _screen_text(app)
        _lines_visible(dialog)
        assert MARKUP in dialog.replace("\n", "") or "[red]x[/red]" in dialog
        await pilot.press("escape")

        await pilot.press("k")
        assert isinstance(app.screen, KillScreen), [n.message for n in app._notifications]
        await pilot.pause()
        kill = _screen_text(app)
        _lines_visible(kill)
        assert "[red]x" in kill
        await pilot.press("escape")
    assert os.waitpid(hostile_process.pid, os.WNOHANG) == (0, 0)  # nobody signalled it
