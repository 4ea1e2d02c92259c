"""The pieces of the dashboard that need no terminal: formatting, kill rules, CLI errors."""

from __future__ import annotations

import os
import pwd
import signal
import subprocess
import sys
from typing import Any

import pytest

from gputui.model.snapshot import GpuProcess
from gputui.tui.views import formatting as fmt
from gputui.tui.views.kill import Identity, KillPolicy, pidfds_available, read_identity, user_name
from gputui.tui.widgets.host_panel import cores_line
from gputui.tui.widgets.process_table import matches, sort_key


def test_none_reads_na_and_zero_reads_zero() -> None:
    assert fmt.na(None) == "N/A"
    assert fmt.na(0) == "0"
    assert fmt.gib(None) == "N/A"
    assert fmt.gib(0) == "0.0"
    assert fmt.size(None) == "N/A"
    assert fmt.throughput_kbs(None) == "N/A"
    assert fmt.throughput_kbs(0) == "0 KiB/s"
    assert fmt.pstate(None) == "N/A" and fmt.pstate(0) == "P0"
    assert fmt.percent_of(None, 10) is None and fmt.percent_of(5, 0) is None
    assert fmt.percent_of(0, 10) == 0.0


@pytest.mark.parametrize(
    ("value", "text"),
    [(3 * 1024**3, "3.0 GiB"), (512 * 1024**2, "512 MiB"), (2048, "2 KiB")],
)
def test_sizes_pick_a_readable_unit(value: int, text: str) -> None:
    assert fmt.size(value) == text


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0, "0s"),
        (59.9, "59s"),
        (61, "1:01"),
        (3600 + 62, "1:01:02"),
        (2 * 86400 + 3 * 3600, "2d03h"),
        (None, "N/A"),
    ],
)
def test_durations(seconds: float | None, text: str) -> None:
    assert fmt.duration(seconds) == text


def test_spark_uses_a_fixed_scale_and_right_aligns() -> None:
    # A constant 100 % is a full bar, a constant 1 % is the lowest one: level, not just trend.
    assert fmt.spark([100.0] * 3, 3) == "███"
    assert fmt.spark([1.0] * 3, 3) == "▁▁▁"
    assert fmt.spark([0.0, 50.0, 100.0], 5) == "  ▁▄█"
    assert fmt.spark([None, 100.0], 2) == " █"  # a missing sample is a gap, not a zero
    assert fmt.spark(list(range(100)), 4) == fmt.spark([96.0, 97.0, 98.0, 99.0], 4)  # newest kept
    assert fmt.spark([50.0], 0) == ""
    assert fmt.spark([200.0, -5.0], 2) == "█▁"  # clamped


def test_cores_line_keeps_the_busiest_core_of_each_group() -> None:
    assert cores_line((0.0, 100.0, 0.0, 0.0), 2) == "█▁"
    assert len(cores_line(tuple(float(i) for i in range(224)), 50)) == 50
    assert cores_line((), 10) == ""


def _proc(**kw: Any) -> GpuProcess:
    base: dict[str, Any] = dict(
        gpu_index=0, pid=10, type="compute", user="alice", cmdline=("python", "x.py")
    )
    base.update(kw)
    return GpuProcess(**base)


def test_filter_matches_pid_user_command_container_case_insensitively() -> None:
    p = _proc(pid=4321, user="Alice", container="k8s:ml/trainer-0")
    assert (
        matches(p, "4321") and matches(p, "alice") and matches(p, "X.PY") and matches(p, "trainer")
    )
    assert matches(p, "")
    assert not matches(p, "bob")


def test_missing_values_sort_last_in_both_directions() -> None:
    procs = [_proc(pid=1, gpu_memory=None), _proc(pid=2, gpu_memory=5), _proc(pid=3, gpu_memory=9)]
    up = sorted(procs, key=sort_key("gpu_mem", False))
    down = sorted(procs, key=sort_key("gpu_mem", True), reverse=True)
    assert [p.pid for p in up] == [2, 3, 1]
    assert [p.pid for p in down] == [3, 2, 1]


T0 = 1_700_000_000.0
ALICE, BOB = 1000, 1001
NAMES = {ALICE: "alice", BOB: "bob", 0: "root"}


def _policy(owner: int | None = ALICE, *, root: bool = False, **kw: Any) -> KillPolicy:
    """A policy whose processes all started at T0 and belong to `owner` (None: gone)."""
    kw.setdefault("identify", lambda pid: None if owner is None else Identity(pid, T0, owner))
    return KillPolicy(
        is_root=lambda: root, current_uid=lambda: ALICE, name_of=lambda u: NAMES[u], **kw
    )


def test_kill_policy_refuses_other_users_unless_root() -> None:
    ident, refusal = _policy(ALICE).check(_proc(user="alice"))
    assert ident == Identity(10, T0, ALICE) and refusal is None
    ident, refusal = _policy(BOB).check(_proc(user="bob"))
    assert ident is None and refusal is not None and "bob" in refusal and "alice" in refusal
    ident, refusal = _policy(BOB, root=True).check(_proc(user="bob"))
    assert ident is not None and refusal is None


def test_ownership_comes_from_the_real_uid_not_from_user_variables(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """$USER names the process owner, but the uid says otherwise: refused."""
    for var in ("USER", "LOGNAME", "LNAME", "USERNAME"):
        monkeypatch.setenv(var, "bob")
    policy = KillPolicy(
        is_root=lambda: False, identify=lambda pid: Identity(pid, T0, os.getuid() + 4242)
    )
    ident, refusal = policy.check(_proc(user="bob"))
    assert ident is None and refusal is not None and "only root" in refusal
    assert user_name(os.getuid()) == pwd.getpwuid(os.getuid()).pw_name
    assert "bob" not in refusal.split("not ")[1]  # "not <me>" is the real uid's name


def test_kill_policy_refuses_pids_from_another_namespace_even_for_root() -> None:
    hidden = _proc(host_visible=False, user=None)
    assert _policy(0, root=True).check(hidden)[1] is not None


def test_kill_policy_refuses_a_pid_that_no_longer_runs_the_listed_process() -> None:
    listed = _proc(running_s=100.0)  # listed at T0 + 100: it started at T0
    assert _policy().check(listed, listed_at=T0 + 100.5)[1] is None
    reused = KillPolicy(is_root=lambda: True, identify=lambda pid: Identity(pid, T0 + 60.0, ALICE))
    ident, refusal = reused.check(listed, listed_at=T0 + 100.5)
    assert ident is None and refusal is not None and "different process" in refusal
    gone = _policy(None).check(listed)
    assert gone[0] is None and "exited" in (gone[1] or "")


def test_kill_rechecks_identity_at_signalling_time() -> None:
    """The dialog stayed open; meanwhile the PID went to a new process: no signal."""
    sent: list[tuple[int, int]] = []
    current = {"ident": Identity(77, T0, ALICE)}
    policy = _policy(
        identify=lambda pid: current["ident"], send_signal=lambda p, s: sent.append((p, s))
    )
    ident, _ = policy.check(_proc(pid=77))
    assert ident is not None
    current["ident"] = Identity(77, T0 + 30.0, BOB)  # exited, reaped, number reused
    ok, message = policy.kill(ident, signal.SIGTERM)
    assert not ok and sent == [] and "no longer" in message and "77" in message
    current["ident"] = None  # type: ignore[assignment]
    ok, message = policy.kill(ident, signal.SIGTERM)
    assert not ok and sent == [] and "already exited" in message


@pytest.mark.parametrize(
    ("error", "words"),
    [
        (ProcessLookupError(), "already exited"),
        (PermissionError(), "permission denied"),
        (OSError(5, "I/O error"), "I/O error"),
    ],
)
def test_kill_failures_are_reported_not_raised(error: OSError, words: str) -> None:
    def send(pid: int, sig: int) -> None:
        raise error

    sent, message = _policy(send_signal=send).kill(Identity(77, T0, ALICE), signal.SIGTERM)
    assert not sent and words in message and "77" in message


def test_kill_sends_the_chosen_signal() -> None:
    got: list[tuple[int, int]] = []
    sent, message = _policy(send_signal=lambda p, s: got.append((p, s))).kill(
        Identity(78, T0, ALICE), signal.SIGKILL
    )
    assert sent and got == [(78, signal.SIGKILL)] and "SIGKILL" in message


@pytest.mark.skipif(not pidfds_available(), reason="no pidfd on this platform")
def test_kill_goes_through_a_pidfd_of_the_checked_process() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        ident = read_identity(child.pid)
        assert ident is not None and ident.uid == os.getuid()
        sent, message = KillPolicy().kill(ident, signal.SIGTERM)
        assert sent, message
        assert child.wait(timeout=10) == -signal.SIGTERM
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(timeout=10)


def _gputui(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "gputui", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=full_env,
    )


@pytest.mark.slow
def test_source_nvml_without_nvml_is_one_line_and_exit_2() -> None:
    # No GPU and no libnvidia-ml on this machine (and LD_LIBRARY_PATH cleared of any fake one).
    result = _gputui("--source", "nvml", env={"LD_LIBRARY_PATH": "", "FAKE_NVML_SCENARIO": ""})
    if result.returncode == 0:
        pytest.skip("NVML is usable here")
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gputui: ") and "NVML" in lines[0]
    assert "Traceback" not in result.stderr


@pytest.mark.slow
@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--demo", "--interval", "0"], "--interval"),
        (["--demo", "--scenario", "/nonexistent.toml"], "nonexistent"),
    ],
)
def test_bad_options_are_one_line_errors(args: list[str], words: str) -> None:
    result = _gputui(*args)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and words in lines[0] and "Traceback" not in result.stderr


@pytest.mark.slow
def test_without_a_terminal_the_dashboard_refuses_instead_of_spinning() -> None:
    result = _gputui("--demo")  # stdin/stdout are pipes here
    assert result.returncode == 2
    assert "needs a terminal" in result.stderr and "Traceback" not in result.stderr


def test_spark_blocks_kept_per_scale_draw_as_computed() -> None:
    """fmt.spark keeps each value's block per scale; a value seen on one scale must not
    lend its block to another, and a second call draws what the first did."""
    from gputui.tui.views import formatting as fmt

    values = [0.0, 12.5, 50.0, 99.0, None, 100.0, 3]
    first = fmt.spark(values, 10)
    assert first == fmt.spark(values, 10) == fmt.spark(tuple(values), 10)
    assert first == "   " + "▁▁▄█ █▁"
    assert fmt.spark([50.0], 1, hi=200.0) == "▂"  # 50 of 200: a quarter, not the 0-100 half
    assert fmt.spark(iter([50.0, 100.0]), 2) == "▄█"
