"""`gputui report FILE` on a stand-in recording of simulated GPUs (the store's reader is
replaced by tests/usage/runs.py's ListRecording through `commands.report.open_run`)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from gputui.cli import main
from gputui.model.alert import AlertChange
from tests.usage.runs import TRAINING, ListRecording, simulated_run

GIB = 1 << 30
PEAK = 10 * GIB - (1 << 20)  # the scenario's 10 GiB plateau, as the simulator rounds it


T0 = 1_800_000_000.0
ALERTS = [
    AlertChange(T0 + 50, "memory_high", "firing", "warning", "GPU 1 memory at 96 %", gpu="1"),
    AlertChange(T0 + 70, "memory_high", "cleared", "warning", "GPU 1 memory back", gpu="1"),
    AlertChange(T0 + 75, "xid", "firing", "critical", "XID 79\x1b[2J", gpu="0:MIG-1"),
    AlertChange(T0 + 79, "process_ended", "firing", "info", "eval ended", gpu="1", pid=5151),
    AlertChange(T0 + 200, "gpu_lost", "firing", "critical", "after the range", gpu="0"),
]


@pytest.fixture
def recording(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    snaps = simulated_run(TRAINING, 120, tmp_path)
    path = tmp_path / "run.sqlite"
    path.write_bytes(b"stand-in")
    monkeypatch.setattr(
        "gputui.commands.report.open_run", lambda _p: ListRecording(snaps, alerts=ALERTS)
    )
    monkeypatch.setenv("TZ", "UTC")
    return path


def report(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["report", *argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_text_report_with_tables_and_plots(
    capsys: pytest.CaptureFixture[str], recording: Path
) -> None:
    code, out, err = report(capsys, str(recording))
    assert code == 0, err
    assert "120 snapshots, every 1 s, measured" in out
    assert "Util % p50/p95/max" in out and "Energy Wh" in out
    lines = out.splitlines()
    train = next(line for line in lines if line.startswith("4242 "))
    assert " 10.0 " in train and "(sm)" in train and "running" in train
    evaluation = next(line for line in lines if line.startswith("5151 "))
    assert "2027-01-15 08:00:40+00:00  2027-01-15 08:01:19+00:00" in evaluation
    assert " 3.0 " in evaluation and "running" not in evaluation
    for title in ("Utilisation %", "Memory used GiB", "Power W", "Temperature °C"):
        assert title in out
    assert "\x1b" not in out


def test_without_plotext_the_tables_and_how_to_get_plots(
    capsys: pytest.CaptureFixture[str], recording: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "plotext", None)
    code, out, _ = report(capsys, str(recording))
    assert code == 0
    assert "Util % p50/p95/max" in out and "Utilisation %" not in out
    assert out.rstrip().endswith("pip install 'gputui[plots]') to draw them")


def test_json_document(capsys: pytest.CaptureFixture[str], recording: Path) -> None:
    code, out, _ = report(capsys, str(recording), "--json")
    doc = json.loads(out)
    assert code == 0 and doc["schema_version"] == 1
    assert doc["run"]["snapshots"] == 120 and doc["run"]["gap_bound_s"] == 5
    gpu0 = doc["gpus"][0]
    assert gpu0["memory_peak"] == PEAK and gpu0["energy_wh"] > 0
    by_pid = {p["pid"]: p for p in doc["processes"]}
    assert by_pid[4242]["memory_peak"] == PEAK
    assert by_pid[4242]["memory_peak_by_gpu"] == {"0": PEAK}
    assert by_pid[5151]["ended"] and not by_pid[4242]["ended"]


def test_since_and_until_relative_to_the_recording(
    capsys: pytest.CaptureFixture[str], recording: Path
) -> None:
    code, out, _ = report(capsys, str(recording), "--json", "--since", "+60s", "--until=-20s")
    run = json.loads(out)["run"]
    assert code == 0 and run["snapshots"] == 40
    assert run["start"] == 1_800_000_060 and run["end"] == 1_800_000_099


def test_iso_times(capsys: pytest.CaptureFixture[str], recording: Path) -> None:
    code, out, _ = report(
        capsys, str(recording), "--json", "--since", "2027-01-15T08:00:10Z",
        "--until", "2027-01-15 08:00:19+00:00",
    )  # fmt: skip
    assert code == 0 and json.loads(out)["run"]["snapshots"] == 10


def test_pid_reports_that_process_on_its_gpus_while_it_ran(
    capsys: pytest.CaptureFixture[str], recording: Path
) -> None:
    code, out, _ = report(capsys, str(recording), "--json", "--pid", "5151")
    doc = json.loads(out)
    assert code == 0 and [p["pid"] for p in doc["processes"]] == [5151]
    assert [g["index"] for g in doc["gpus"]] == [1]
    assert doc["run"]["start"] == 1_800_000_040 and doc["run"]["end"] == 1_800_000_079
    code, _, err = report(capsys, str(recording), "--pid", "999")
    assert code == 1 and err == "gputui: --pid: no process 999 in the recording's range\n"


@pytest.mark.parametrize(
    ("argv", "option"),
    [
        (["--since", "yesterday"], "--since"),
        (["--until", "\x1b[2J"], "--until"),
        (["--since=-99999999999d"], "--since"),
        (["--since", "+10m", "--until", "+1m"], "--since"),
        (["--pid", "0"], "--pid"),
        (["--pid", "1e3"], "--pid"),
    ],
)
def test_bad_input_is_one_line_naming_the_option(
    capsys: pytest.CaptureFixture[str], recording: Path, argv: list[str], option: str
) -> None:
    code, out, err = report(capsys, str(recording), *argv)
    assert code == 2 and out == ""
    assert err.startswith(f"gputui: {option}: ") and err.count("\n") == 1 and "\x1b" not in err


def test_a_missing_file_is_one_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = report(capsys, str(tmp_path / "none.sqlite"))
    assert code == 2 and err.count("\n") == 1 and "no such file" in err


def test_csv_export_and_it_never_replaces_a_file_gputui_did_not_write(
    capsys: pytest.CaptureFixture[str], recording: Path, tmp_path: Path
) -> None:
    out_csv = tmp_path / "samples.csv"
    code, _, err = report(capsys, str(recording), "--csv", str(out_csv), "--no-plots")
    assert code == 0, err
    lines = out_csv.read_text().splitlines()
    assert lines[0].startswith("timestamp,gpu,name,utilization_gpu,memory_used")
    assert len(lines) == 1 + 120 * 2
    code, _, _ = report(capsys, str(recording), "--csv", str(out_csv), "--until", "+9s")
    assert code == 0 and len(out_csv.read_text().splitlines()) == 1 + 10 * 2  # its own: replaced
    mine = tmp_path / "mine.csv"
    mine.write_text("my,notes\n1,2\n")
    code, _, err = report(capsys, str(recording), "--csv", str(mine))
    assert code == 2 and err.startswith("gputui: --csv: ") and err.count("\n") == 1
    assert mine.read_text() == "my,notes\n1,2\n"
    assert err == f"gputui: --csv: {mine}: not a file gputui wrote; left as it is\n"


def test_parquet_without_pyarrow_is_one_line_exit_2(
    capsys: pytest.CaptureFixture[str], recording: Path, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    code, out, err = report(capsys, str(recording), "--parquet", str(tmp_path / "x.parquet"))
    assert (code, out) == (2, "")
    assert err == "gputui: --parquet: needs pyarrow: pip install 'gputui[parquet]'\n"
    assert not (tmp_path / "x.parquet").exists()


def test_parquet_export(
    capsys: pytest.CaptureFixture[str], recording: Path, tmp_path: Path
) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    out_file = tmp_path / "samples.parquet"
    code, _, err = report(capsys, str(recording), "--parquet", str(out_file), "--json")
    assert code == 0, err
    table = pq.read_table(out_file)
    assert table.num_rows == 240 and table.column_names[:3] == ["timestamp", "gpu", "name"]
    assert max(table.column("memory_used").to_pylist()) == PEAK
    code, _, _ = report(capsys, str(recording), "--parquet", str(out_file), "--json")
    assert code == 0  # its own file: replaced
    other = tmp_path / "other.parquet"
    other.write_bytes(b"PAR1 someone else's PAR1")
    code, _, err = report(capsys, str(recording), "--parquet", str(other), "--json")
    assert code == 2 and other.read_bytes() == b"PAR1 someone else's PAR1"


def test_an_offset_may_follow_its_option_as_the_next_word(
    capsys: pytest.CaptureFixture[str], recording: Path
) -> None:
    code, out, err = report(capsys, str(recording), "--json", "--since", "-30s", "--until", "-10s")
    assert code == 0, err
    assert json.loads(out)["run"]["snapshots"] == 21


def test_the_alert_changes_of_the_range(
    capsys: pytest.CaptureFixture[str], recording: Path
) -> None:
    code, out, _ = report(capsys, str(recording), "--no-plots")
    assert code == 0 and "Alerts: 3 fired, 1 cleared" in out
    assert "GPU 0:MIG-1" in out and "XID 79^[[2J" in out and "after the range" not in out
    code, out, _ = report(capsys, str(recording), "--json", "--until", "+72s")
    assert [a["rule"] for a in json.loads(out)["alerts"]] == ["memory_high", "memory_high"]
    code, out, _ = report(capsys, str(recording), "--json", "--pid", "4242")
    assert [a["rule"] for a in json.loads(out)["alerts"]] == ["xid"]  # its GPU 0's
    code, out, _ = report(capsys, str(recording), "--json", "--pid", "5151")
    rules = [a["rule"] for a in json.loads(out)["alerts"]]
    assert rules == ["memory_high", "memory_high", "process_ended"]


def test_a_recording_without_polls(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "empty.sqlite"
    path.write_bytes(b"stand-in")
    monkeypatch.setattr("gputui.commands.report.open_run", lambda _p: ListRecording([]))
    code, out, _ = report(capsys, str(path), "--since=-1h")
    assert (code, out) == (0, "No snapshots in this range.\n")
    code, out, _ = report(capsys, str(path), "--json")
    doc = json.loads(out)
    assert doc["run"]["snapshots"] == 0 and doc["gpus"] == [] and doc["alerts"] is None


@pytest.mark.parametrize("text", ["9" * 5000, "\u0661\u0662", "0", "4194305", " 12x"])
def test_a_pid_that_is_no_pid_is_one_line(text: str) -> None:
    """Thousands of digits (int() refuses past 4,300) and other scripts' digits included."""
    from gputui.commands.report import parse_pid
    from gputui.core.errors import UserError

    with pytest.raises(UserError, match="--pid: .* is not a process id"):
        parse_pid(text)
    assert parse_pid(" 4242 ") == 4242
