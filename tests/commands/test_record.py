"""`gputui record`'s options, and `gputui --record`'s source: the dashboard outlives a
recording that fails."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from gputui.commands.record import parse_duration
from gputui.core.errors import UserError
from gputui.recording.reader import open_recording
from gputui.recording.schema import RecordingError
from gputui.recording.store import Recorder
from gputui.sources.recorded import Recorded
from tests.recording.conftest import simulated

RECORD = [sys.executable, "-m", "gputui", "record", "--source", "demo"]


def test_durations() -> None:
    assert parse_duration("90m", "--retention") == 5400
    assert parse_duration("7d", "--retention") == 7 * 86400
    assert parse_duration("2w", "--retention") == 14 * 86400
    assert parse_duration("3600", "--retention") == 3600
    for bad in ("10s", "soon", "-1d", "1e9d", ""):
        with pytest.raises(UserError, match="--retention: .* is not a duration"):
            parse_duration(bad, "--retention")


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["--retention", "soon"], "gputui: --retention: 'soon' is not a duration"),
        (["--interval", "0"], "gputui: --interval: 0 s is out of range (0.1 to 3600)"),
        (["--out", "/nonexistent-folder/run.sqlite"], "gputui: /nonexistent-folder/run.sqlite: cannot create"),
    ],
)  # fmt: skip
def test_bad_options_are_one_line_and_exit_2(args: list[str], line: str) -> None:
    proc = subprocess.run([*RECORD, *args], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.startswith(line) and proc.stderr.count("\n") == 1, proc.stderr


def test_the_dashboards_source_records_each_poll(tmp_path: Path) -> None:
    source, clock = simulated("demo")
    recorded = Recorded(source, Recorder(tmp_path / "run.sqlite"))
    polls = []
    for i in range(3):
        clock[0] = float(i)
        polls.append(recorded.poll())
    recorded.close()
    with open_recording(tmp_path / "run.sqlite") as recording:
        assert list(recording.snapshots()) == polls


def test_a_failed_recording_is_a_notice_and_polling_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source, clock = simulated("demo")
    recorder = Recorder(tmp_path / "run.sqlite")
    recorded = Recorded(source, recorder)
    recorded.poll()

    def full(*_args: object, **_kw: object) -> None:
        raise RecordingError("run.sqlite: the disk is full; recorded up to 12:00:00")

    monkeypatch.setattr(recorder, "write", full)
    clock[0] = 1.0
    after = recorded.poll()
    assert after.notices[-1] == (
        "recording stopped: run.sqlite: the disk is full; recorded up to 12:00:00"
    )
    assert recorded.recorder is None
    clock[0] = 2.0
    assert recorded.poll().timestamp > after.timestamp
    Recorder(tmp_path / "run.sqlite").close()  # the lock was given back


def test_replay_refuses_what_it_cannot_play_in_one_line(tmp_path: Path) -> None:
    noise = tmp_path / "noise.sqlite"
    noise.write_bytes(b"\x00not sqlite" * 50)
    empty = tmp_path / "empty.sqlite"
    Recorder(empty).close()
    for path, line in (
        (
            tmp_path / "absent.sqlite",
            f"gputui: recording: {tmp_path / 'absent.sqlite'}: no such file",
        ),
        (noise, f"gputui: {noise}: not a gputui recording (not an SQLite file); left as it is"),
        (empty, f"gputui: {empty}: no poll recorded yet"),
    ):
        proc = subprocess.run([sys.executable, "-m", "gputui", "replay", str(path)],
                              capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)  # fmt: skip
        assert (proc.returncode, proc.stderr) == (2, line + "\n")


def test_the_dashboards_recording_keeps_the_alerts_with_the_polls(tmp_path: Path) -> None:
    """`gputui --record` on the faults scenario: GPU 2 is lost, and the recording holds
    the gpu_lost alert beside the polls, as replay's time bar marks it."""
    from gputui.alerts.engine import AlertEngine
    from gputui.alerts.rules import default_rules

    source, clock = simulated("faults")
    engine = AlertEngine(default_rules())
    recorded = Recorded(source, Recorder(tmp_path / "run.sqlite"), alerts=engine.update)
    for i in range(3):
        clock[0] = 300.0 + i
        recorded.poll()
    recorded.close()
    with open_recording(tmp_path / "run.sqlite") as recording:
        alerts = recording.alerts()
    assert any(a.rule == "gpu_lost" and a.state == "firing" for a in alerts), alerts


def test_gputui_record_writes_the_alerts_its_rules_fire(tmp_path: Path) -> None:
    import os
    import signal
    import time

    from gputui.core.resources import scenarios_dir

    out = tmp_path / "run.sqlite"
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "config")}
    scenario = scenarios_dir() / "faults.toml"
    args = ["--source", "simulated", "--scenario", str(scenario), "--interval", "0.1"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "gputui", "record", "--out", str(out), *args],
        stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if out.exists():
                with open_recording(out) as recording:
                    if recording.alerts():
                        break
            time.sleep(0.2)
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=60)
    assert proc.returncode == 0
    with open_recording(out) as recording:
        assert any(a.rule == "gpu_lost" for a in recording.alerts())
