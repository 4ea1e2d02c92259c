"""`gputui snapshot` end to end, in subprocesses (this machine has no libnvidia-ml)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from gputui.cli import main
from gputui.model.schema import SnapshotModel

pytestmark = pytest.mark.slow


def _gputui(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "gputui", "snapshot", *args],
        capture_output=True,
        text=True,
        env=full_env,
        timeout=120,
    )


def _nvml_loads() -> bool:
    try:
        import pynvml

        pynvml.nvmlInit()
    except Exception:
        return False
    pynvml.nvmlShutdown()
    return True


@pytest.mark.skipif(_nvml_loads(), reason="this machine has a working NVIDIA driver")
def test_without_nvml_exits_2_with_the_reason() -> None:
    proc = _gputui()
    assert proc.returncode == 2
    first = proc.stderr.splitlines()[0]
    assert first.startswith("gputui: NVML unavailable: ") and len(first) > len("gputui: NVML unavailable: ") + 5
    assert "--demo" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stdout == ""


def test_demo_prints_the_table() -> None:
    proc = _gputui("--demo")
    assert proc.returncode == 0, proc.stderr
    assert "SIMULATED (demo.toml)" in proc.stdout
    assert "NVIDIA A100-SXM4-80GB" in proc.stdout
    assert "\x1b[" not in proc.stdout  # not a tty: no colour


def test_demo_json_validates_against_the_schema() -> None:
    proc = _gputui("--demo", "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    SnapshotModel.model_validate(data)
    assert data["source"] == "simulated" and len(data["devices"]) == 2


def test_scenario_implies_demo(write_scenario: Callable[[str, str], Path], timeline: Path) -> None:
    proc = _gputui("--scenario", str(timeline), "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["host"]["hostname"] == "unit-host"


def test_bad_scenario_is_one_line_exit_2(write_scenario: Callable[[str, str], Path]) -> None:
    path = write_scenario('[[gpu]]\nname = "G"\nmemory_total = -1\n', "bad.toml")
    proc = _gputui("--scenario", str(path))
    assert proc.returncode == 2
    assert proc.stderr == f"gputui: {path}: gpu[0].memory_total: must be positive\n"


def test_json_schema_flag(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["snapshot", "--json-schema"]) == 0
    js = json.loads(capsys.readouterr().out)
    assert js["title"] == "gputui snapshot" and "devices" in js["properties"]


def test_demo_does_not_import_textual_pydantic_or_pynvml() -> None:
    code = (
        "import sys, io, contextlib\n"
        "from gputui.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    rc = main(['snapshot', '--demo'])\n"
        "assert rc == 0\n"
        "print(' '.join(m for m in ('textual', 'pydantic', 'pynvml') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
    # And the JSON path, too.
    code_json = code.replace("'--demo']", "'--demo', '--json']")
    out = subprocess.run([sys.executable, "-c", code_json], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_importtime_of_demo_has_no_heavy_modules() -> None:
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "gputui", "snapshot", "--demo"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0
    imported = {line.rsplit("|", 1)[-1].strip() for line in proc.stderr.splitlines() if "|" in line}
    assert "gputui.sources.simulated.source" in imported  # the probe sees our own modules ...
    assert not {"textual", "pydantic", "pynvml"} & imported  # ... and none of the heavy ones


def test_no_color_env_and_tty(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    monkeypatch.delenv("NO_COLOR", raising=False)
    assert main(["snapshot", "--demo"]) == 0
    assert "\x1b[" in capsys.readouterr().out
    monkeypatch.setenv("NO_COLOR", "1")
    assert main(["snapshot", "--demo"]) == 0
    assert "\x1b[" not in capsys.readouterr().out
