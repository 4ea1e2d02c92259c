from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from gputui.core.errors import UserError
from gputui.sources.simulated.scenario import load_scenario
from gputui.sources.simulated.source import SimulatedSource
from gputui.sources.simulated.toml_fields import parse_size

Write = Callable[[str, str], Path]


def _error(path: Path) -> str:
    with pytest.raises(UserError) as exc:
        SimulatedSource.from_scenario(path)
    message = str(exc.value)
    assert "\n" not in message
    # "path: field: problem", or "path:LINE: problem" where the line is known
    assert message.startswith(f"{path}:")
    return message[len(f"{path}:") :].removeprefix(" ")


def test_bad_toml_syntax_names_the_line(write_scenario: Write, timeline_text: str) -> None:
    broken = timeline_text.replace('hostname = "unit-host"', 'hostname = "unit-host')
    line = timeline_text.splitlines().index('hostname = "unit-host"') + 1
    msg = _error(write_scenario(broken, "demo.toml"))
    assert msg.startswith(f"{line}: invalid TOML: ")
    assert msg.endswith(")") and "(column " in msg


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ('memory_total = "80 GiB"', "memory_total = 0", "gpu[1].memory_total: must be positive"),
        ('memory_total = "80 GiB"', 'memory_total = "lots"', "gpu[1].memory_total: 'lots' is not a size"),
        ("power_limit_w = 400", 'power_limit_w = "400W"', "gpu[1].power_limit_w: must be a number, not a string"),
        ("power_limit_w = 400", "", "gpu[1].power_limit_w: is required"),
        ('unsupported = ["fan", "ecc"]', 'unsupported = ["fan", "colour"]', "gpu[0].unsupported[1]: unknown field 'colour'"),
        ("lost_after_s = 30", "lost_after_s = 30\nlost_after = 31", "gpu[1].lost_after: unknown field"),
        ("gpu = 1\n", "gpu = 2\n", "process[1].gpu: no such GPU"),
        ("end_s = 50", "end_s = 5", "process[0].end_s: must be after start_s"),
        ('workload = "inference"', 'workload = "mining"', "process[1].workload: 'mining' is not one of"),
        ("pid = 200", "pid = 100\ngpu_memory = 1\n", None),  # duplicate key: TOML error, line-based
        ("cpu_count = 4", "cpu_count = 0", "host.cpu_count: must be positive"),
        ("seed = 11", "seed = 11.5", "seed: must be an integer, not a number"),
        ('compute_capability = "8.6"', "compute_capability = 8.6", "gpu[0].compute_capability: must be a string"),
    ],
)
def test_wrong_field_names_its_path(
    write_scenario: Write, timeline_text: str, old: str, new: str, expected: str | None
) -> None:
    assert old in timeline_text
    msg = _error(write_scenario(timeline_text.replace(old, new, 1), "demo.toml"))
    if expected is None:
        assert msg.split(":")[0].isdigit() and "invalid TOML" in msg
    else:
        assert msg.startswith(expected), msg


def test_same_pid_twice_on_one_gpu(write_scenario: Write, timeline_text: str) -> None:
    text = timeline_text + '\n[[process]]\ngpu = 0\npid = 100\ncommand = "x"\n'
    assert "process[2].pid: 100 is already used on gpu 0" in _error(write_scenario(text, "s.toml"))


def test_a_scenario_needs_a_gpu(write_scenario: Write) -> None:
    assert _error(write_scenario('seed = 1\nhostname = "h"\n', "s.toml")).startswith("gpu: is required")


def test_missing_file(tmp_path: Path) -> None:
    assert _error(tmp_path / "nope.toml") == "scenario file not found"


def test_non_utf8_file(write_scenario: Write, tmp_path: Path) -> None:
    path = tmp_path / "bin.toml"
    path.write_bytes(b"\xff\xfe\x00garbage")
    assert _error(path) == "1: not a UTF-8 text file"


def test_minimal_scenario_gets_defaults(write_scenario: Write) -> None:
    path = write_scenario(
        '[[gpu]]\nname = "G"\nmemory_total = "1 GiB"\npower_limit_w = 100\n'
        "max_sm_clock_mhz = 1000\nmax_mem_clock_mhz = 1000\n",
        "min.toml",
    )
    sc = load_scenario(path)
    assert sc.name == "min.toml" and sc.processes == ()
    gpu = sc.gpus[0]
    assert gpu.uuid.startswith("GPU-") and len(gpu.uuid) == 40
    assert gpu.pci_bus_id == "00000000:01:00.0"
    assert 0 < gpu.memory_reserved < gpu.memory_total
    snap = SimulatedSource(sc, clock=lambda: 0.0).poll()
    assert snap.devices[0].sample is not None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("24 GiB", 24 << 30),
        ("512MiB", 512 << 20),
        ("1.5 GiB", 3 << 29),
        ("80 GB", 80 * 10**9),
        (1234, 1234),
        ("12 parsecs", None),
        (True, None),
        (1.5, None),
    ],
)
def test_parse_size(text: object, expected: int | None) -> None:
    assert parse_size(text) == expected
