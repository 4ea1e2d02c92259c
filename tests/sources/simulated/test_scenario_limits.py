"""Out-of-range scenario values are one-line errors naming the file and field, never a crash.

The cases a fuzz campaign found (a 400-digit size, a power limit of
1e308, a start timestamp of 1e308, 2^63 CPUs) plus the range of every other field.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from gputui.cli import main
from gputui.core.errors import UserError
from gputui.sources.simulated.scenario import load_scenario
from gputui.sources.simulated.source import SimulatedSource
from gputui.sources.simulated.toml_fields import parse_size

Write = Callable[[str, str], Path]

GPU = (
    '[[gpu]]\nname = "G"\nmemory_total = "8 GiB"\npower_limit_w = 300\n'
    "max_sm_clock_mhz = 1800\nmax_mem_clock_mhz = 9000\n"
)
PROCESS = '[[process]]\ngpu = 0\ncommand = "python x.py"\n'


def _error(path: Path) -> str:
    with pytest.raises(UserError) as exc:
        load_scenario(path)
    message = str(exc.value)
    assert "\n" not in message
    # "path: field: problem", or "path:LINE: problem" where the line is known
    assert message.startswith(f"{path}:")
    return message[len(f"{path}:") :].removeprefix(" ")


def _cli(path: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, str, str]:
    code = main(["snapshot", "--scenario", str(path), *extra])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(
    ("top", "gpu", "host", "process", "expected"),
    [
        # the reported ones
        ("", 'memory_total = "' + "9" * 400 + ' GiB"', "", "", "gpu[0].memory_total: must be at most"),
        ("", "power_limit_w = 1e308", "", "", "gpu[0].power_limit_w: must be at most"),
        ("start_timestamp = 1e308", "", "", "", "start_timestamp: must be at most"),
        ("", "", f"cpu_count = {2**63}", "", "host.cpu_count: must be at most"),
        # sizes: integer bytes too
        ("", f"memory_total = {2**62}", "", "", "gpu[0].memory_total: must be at most"),
        ("", "", 'memory_total = "1e3 GiB"', "", "host.memory_total: '1e3 GiB' is not a size"),
        ("", "", "", 'rss = "' + "1" * 5000 + '"', "process[0].rss: "),
        # times
        ("start_timestamp = -1", "", "", "", "start_timestamp: must be at least 0"),
        ("", "lost_after_s = 1e300", "", "", "gpu[0].lost_after_s: must be at most"),
        ("", "", "", "start_s = -1e300", "process[0].start_s: must be at least"),
        ("", "", "", "warmup_s = 1e-320", "process[0].warmup_s: must be 0 or at least"),
        ("", "", "", "eval_every_s = 1e-300", "process[0].eval_every_s: must be at least"),
        # identities
        ("", "", "", "pid = 99999999999", "process[0].pid: must be at most"),
        ("", "", "", "container = \"c\"\ncontainer_pid = 99999999999", "process[0].container_pid: must be at most"),
        ("seed = " + str(2**70), "", "", "", "seed: must be at most"),
        ("hostname = \"" + "h" * 300 + "\"", "", "", "", "hostname: is longer than"),
        ("", "", "", "command = \"" + "x " * 40000 + "\"", "process[0].command: is longer than"),
        ("", 'compute_capability = "8.6\\n"', "", "", "gpu[0].compute_capability: "),
        # clocks and powers
        ("", "max_sm_clock_mhz = 10000000", "", "", "gpu[0].max_sm_clock_mhz: must be at most"),
        ("", "idle_power_w = 1e-320", "", "", "gpu[0].idle_power_w: must be 0 or at least"),
        ("", "", "", "cpu_percent = 1e300", "process[0].cpu_percent: must be at most"),
        ("", "", "cpu_count = 2", "cpu_percent = 250", "process[0].cpu_percent: is more than host.cpu_count"),
    ],
)
def test_out_of_range_field_is_one_line(
    write_scenario: Write, top: str, gpu: str, host: str, process: str, expected: str
) -> None:
    gpu_text = GPU
    for line in gpu.splitlines():
        key = line.split("=")[0].strip()
        gpu_text = "\n".join(x for x in gpu_text.splitlines() if not x.startswith(key + " ")) + "\n"
    text = f"{top}\n[host]\n{host}\n{gpu_text}{gpu}\n{PROCESS}{process}\n"
    text = text.replace('command = "python x.py"\ncommand', "command")
    msg = _error(write_scenario(text, "s.toml"))
    assert msg.startswith(expected), msg


def test_huge_power_limit_cannot_reach_the_poll(
    write_scenario: Write, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_scenario(GPU.replace("power_limit_w = 300", "power_limit_w = 1e308"), "p.toml")
    code, out, err = _cli(path, capsys)
    assert code == 2 and out == ""
    assert err.strip() == f"gputui: {path}: gpu[0].power_limit_w: must be at most 10000"


def test_huge_start_timestamp_is_refused_before_printing(
    write_scenario: Write, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_scenario("start_timestamp = 1e308\n" + GPU, "t.toml")
    code, out, err = _cli(path, capsys)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "start_timestamp: must be at most" in err


def test_latest_allowed_timestamp_still_prints(
    write_scenario: Write, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_scenario("start_timestamp = 100000000000\n" + GPU, "t.toml")
    code, out, _ = _cli(path, capsys)
    assert code == 0 and "G" in out


def test_many_cpus_are_refused_at_once(write_scenario: Write) -> None:
    path = write_scenario(f"[host]\ncpu_count = {2**63}\n" + GPU, "c.toml")
    with pytest.raises(UserError, match=r"host\.cpu_count: must be at most 4096$"):
        SimulatedSource.from_scenario(path)


def test_the_largest_allowed_values_poll_cleanly(write_scenario: Write) -> None:
    """Every upper bound together still gives finite, in-range readings."""
    text = (
        f"seed = {2**64 - 1}\nstart_timestamp = 100000000000\n"
        '[host]\ncpu_count = 4096\nmemory_total = "1024 TiB"\nswap_total = "1024 TiB"\n'
        '[[gpu]]\nname = "G"\nmemory_total = "1024 TiB"\npower_limit_w = 10000\n'
        "max_sm_clock_mhz = 100000\nmax_mem_clock_mhz = 100000\nlost_after_s = 1e9\n"
        f'[[process]]\ngpu = 0\ncommand = "x"\npid = {1 << 22}\ngpu_memory = "1024 TiB"\n'
        'rss = "1024 TiB"\ncpu_percent = 409600\nstart_s = -1e9\nwarmup_s = 1e9\n'
        "memory_ramp_s = 1e9\neval_every_s = 1e9\neval_s = 0\n"
    )
    source = SimulatedSource(load_scenario(write_scenario(text, "max.toml")), clock=lambda: 0.0)
    for t in (0.0, 1e9 - 1, 1e9):
        snap = source.snapshot_at(t)
        assert snap.host is not None and len(snap.host.per_cpu_percent) == 4096


def test_deeply_nested_toml_is_one_line(write_scenario: Write) -> None:
    path = write_scenario(GPU + "notices = " + "[" * 500 + "]" * 500 + "\n", "deep.toml")
    msg = _error(path)
    assert msg.startswith("7: invalid TOML: arrays or inline tables are nested too deeply"), msg


def test_deep_dotted_keys_are_one_line(write_scenario: Write) -> None:
    path = write_scenario(GPU + "memory_reserved." + ".".join(["a"] * 3000) + " = 1\n", "dot.toml")
    assert "nested more than 64 levels deep" in _error(path)


def test_number_beyond_the_digit_limit_is_one_line(write_scenario: Write) -> None:
    path = write_scenario("seed = " + "7" * 5000 + "\n" + GPU, "n.toml")
    assert _error(path).startswith("1: invalid TOML: a number is too long")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1.5 GiB", 3 << 29),
        ("0.1 KB", 100),
        ("9" * 30 + " B", int("9" * 30)),
        ("1." + "0" * 500 + "1 KiB", 1024),  # exact decimal, truncated to whole bytes
        ("1" * 5000, None),
    ],
)
def test_parse_size_is_exact_and_never_overflows(text: str, expected: int | None) -> None:
    assert parse_size(text) == expected
