"""`gputui check`: 0 or 1 with one line, on simulated GPUs and on the fake NVML library."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from gputui.cli import main
from tests.fakenvml_lib import NEEDS_FAKE, build_fake

SCENARIO = """
[[gpu]]
name = "NVIDIA GeForce RTX 3090"
memory_total = "24 GiB"
memory_reserved = "0 GiB"
power_limit_w = 350
max_sm_clock_mhz = 1995
max_mem_clock_mhz = 9751
temp_idle_c = 40

[[gpu]]
name = "NVIDIA GeForce RTX 3090"
memory_total = "24 GiB"
memory_reserved = "0 GiB"
power_limit_w = 350
max_sm_clock_mhz = 1995
max_mem_clock_mhz = 9751
temp_idle_c = 40

[[process]]
gpu = 1
command = "python notebook.py"
workload = "interactive"
gpu_memory = "20 GiB"
"""


def check(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["check", *argv])
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture
def scenario(tmp_path: Path) -> str:
    path = tmp_path / "two.toml"
    path.write_text(SCENARIO)
    return str(path)


def test_enough_free_memory_on_every_gpu_passes(
    capsys: pytest.CaptureFixture[str], scenario: str
) -> None:
    code, out, err = check(
        capsys, "--source", "simulated", "--scenario", scenario, "--min-free", "3GiB"
    )
    assert code == 0, err
    assert out.startswith("ok: 2 GPUs readable, least free 4.0 GiB") and out.count("\n") == 1


def test_too_little_free_memory_fails_naming_the_gpu(
    capsys: pytest.CaptureFixture[str], scenario: str
) -> None:
    code, out, _ = check(
        capsys, "--source", "simulated", "--scenario", scenario, "--min-free", "8G"
    )
    assert code == 1
    assert out == "not ready: GPU 1: 4.0 GiB free, below --min-free 8.0 GiB\n"
    code, out, _ = check(
        capsys, "--source", "simulated", "--scenario", scenario, "--min-free", "8G", "--gpu", "0"
    )
    assert code == 0, out


def test_too_hot_fails(capsys: pytest.CaptureFixture[str], scenario: str) -> None:
    code, out, _ = check(capsys, "--source", "demo", "--scenario", scenario, "--max-temp", "30")
    assert code == 1 and out.startswith("not ready: GPU 0: 4") and "above --max-temp 30" in out
    assert "(and 1 more)" in out
    code, out, _ = check(capsys, "--source", "demo", "--scenario", scenario, "--max-temp", "90")
    assert code == 0 and "hottest" in out


@pytest.mark.parametrize(
    ("argv", "names"),
    [
        (["--min-free", "lots"], "--min-free"),
        (["--min-free=-1G"], "--min-free"),
        (["--min-free", "2 PB"], "--min-free"),
        (["--max-temp", "nan"], "--max-temp"),
        (["--max-temp", "1e400"], "--max-temp"),
        (["--gpu", "-1"], "--gpu"),
        (["--gpu", "\x1b[2J"], "--gpu"),
        (["--gpu", "9"], "--gpu"),
        (["--source", "nvml", "--scenario", "x.toml"], "--scenario"),
    ],
)
def test_bad_options_are_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], scenario: str, argv: list[str], names: str
) -> None:
    source = [] if "--source" in argv else ["--source", "simulated", "--scenario", scenario]
    code, out, err = check(capsys, *source, *argv)
    assert code == 2 and out == ""
    assert err.startswith(f"gputui: {names}") and err.count("\n") == 1 and "\x1b" not in err


def test_without_nvml_it_fails_never_falls_back(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from gputui.sources.errors import SourceUnavailable

    def refuse(*_a: object, **_k: object) -> None:
        raise SourceUnavailable("no driver here")

    monkeypatch.setattr("gputui.sources.base.open_source", refuse)
    code, out, _ = check(capsys)
    assert code == 1 and out == "not ready: NVML unavailable: no driver here\n"


FAKE_SCENARIO = """
driver_version = 550.54.15

[device]
name = NVIDIA GeForce RTX 3090
memory_total = 24576MiB
memory_used = 20480MiB
temperature_c = 71

[device]
name = NVIDIA GeForce RTX 3070
memory_total = 8192MiB
lost = true
"""


@pytest.fixture(scope="module")
def fake_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    folder = tmp_path_factory.mktemp("fakenvml-check")
    build_fake(f"BUILD={folder}")
    scenario = folder / "check.conf"
    scenario.write_text(FAKE_SCENARIO)
    yield {
        **os.environ,
        "LD_LIBRARY_PATH": str(folder),
        "FAKE_NVML_SCENARIO": str(scenario),
        "FAKE_NVML_QUIET": "1",
    }


def gputui_check(env: dict[str, str], *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gputui", "check", *argv],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_through_the_fake_nvml_library(fake_env: dict[str, str]) -> None:
    r = gputui_check(fake_env, "--gpu", "0", "--min-free", "3GiB", "--max-temp", "80")
    assert (r.returncode, r.stdout) == (
        0,
        "ok: 1 GPU readable, least free 4.0 GiB (>= 3.0 GiB), hottest 71 °C (<= 80 °C)\n",
    ), r.stderr
    r = gputui_check(fake_env, "--gpu", "0", "--max-temp", "70")
    assert (r.returncode, r.stdout) == (1, "not ready: GPU 0: 71 °C, above --max-temp 70 °C\n")
    r = gputui_check(fake_env)  # every GPU: the 3070 is lost
    assert r.returncode == 1 and r.stdout.startswith("not ready: GPU 1: "), r.stdout
    r = gputui_check(fake_env, "--gpu", "5")
    assert r.returncode == 2 and r.stderr == "gputui: --gpu: no GPU 5 on this host (GPUs: 0, 1)\n"


for _mark in NEEDS_FAKE:
    test_through_the_fake_nvml_library = _mark(test_through_the_fake_nvml_library)
