"""The NVML path stays light: no Textual (UI thread rule), no pydantic, no psutil until host data is wanted."""

from __future__ import annotations

import subprocess
import sys

import pytest


def test_nvml_modules_import_nothing_heavy():
    code = (
        "import sys, gputui.sources.nvml.source, gputui.sources.nvml.query, "
        "gputui.sources.nvml.procs, gputui.sources.nvml.pcie\n"
        "print(sorted(m for m in ('textual', 'pydantic', 'psutil') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_snapshot_needs_neither_psutil_nor_pydantic(fake_nvml, monkeypatch, capsys):
    """`gputui snapshot` (text and --json) on NVML: host details from /proc, no psutil import."""
    import json
    import os

    from gputui import cli

    fake_nvml.gpus[0].compute = [(os.getpid(), 1 << 30)]
    for name in ("psutil", "pydantic", "textual", "gputui.sources.host.source"):
        monkeypatch.setitem(sys.modules, name, None)  # importing it now raises ImportError
    assert cli.main(["snapshot"]) == 0
    text = capsys.readouterr().out
    assert f"{os.getpid():>7}  " in text and "python" in text
    assert cli.main(["snapshot", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    mine = [p for p in data["processes"] if p["pid"] == os.getpid()]
    assert mine and mine[0]["host_visible"] and mine[0]["user"]


def test_snapshot_path_imports_no_typing_psutil_or_json():
    """What `gputui snapshot` imports (each costs 1-25 ms of a one-shot's ~60 ms budget):
    container patterns, PCIe sampler and MIG reader only where they are needed; no
    dataclasses (with inspect, ~20 ms: the snapshot types are model/record.py's)."""
    code = (
        "import sys, gputui.cli, gputui.commands.snapshot, gputui.sources.base, "
        "gputui.sources.nvml.source, gputui.sources.host.procfs, gputui.render.snapshot_text\n"
        "gputui.cli.build_parser('snapshot')\n"
        "print(sorted(m for m in ('typing', 'psutil', 'json', 'pydantic', 'textual', "
        "'gputui.sources.host.source', 'concurrent.futures', 'gputui.sources.host.containers', "
        "'gputui.sources.nvml.pcie', 'gputui.sources.nvml.mig', 'pathlib', "
        "'dataclasses', 'inspect') "
        "if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.skipif(sys.platform != "linux", reason="elsewhere the polls use psutil")
def test_dashboard_imports_no_psutil_until_a_dialog_needs_it():
    """On Linux the dashboard's polls read /proc (host line and processes); psutil (~1.1 MiB,
    15-25 ms) is imported only by what reads on demand: the details dialog's extras, the tree
    view's parents, the kill dialog's identity check (not by the reason a highlighted row
    has no host details: /proc says that too)."""
    code = (
        "import sys, gputui.cli, gputui.tui.app, gputui.tui.run, gputui.tui.screens.process, "
        "gputui.sources.nvml.source, gputui.sources.host.procfs, gputui.sources.host.source, gputui.tui.views.kill\n"
        "from gputui.sources.nvml.source import _open_host_sampler\n"
        "_open_host_sampler().sample()\n"
        "from gputui.sources.host.source import why_not_visible\n"
        "assert why_not_visible(2**22 + 1).startswith('no: it has exited')\n"
        "before = 'psutil' in sys.modules\n"
        "from gputui.sources.host.source import read_ancestors\n"
        "read_ancestors([1])\n"
        "print(before, 'psutil' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True"]
