"""`gputui fit MODELS --against RECORDING --pid PID`: the estimate (tensors + CUDA context +
allocator reserve, from gputui.fit's check) beside the process's observed NVML peak, on a
stand-in recording of simulated GPUs with scripted process memory."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gputui.cli import main
from tests.usage.runs import TRAINING, ListRecording, simulated_run

GIB = 1 << 30
PEAK = 10 * GIB - (1 << 20)  # the scenario's 10 GiB plateau, as the simulator rounds it
MODELS = str(Path(__file__).resolve().parents[2] / "examples" / "models.toml")


@pytest.fixture
def recording(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    snaps = simulated_run(TRAINING, 90, tmp_path)
    path = tmp_path / "run.sqlite"
    path.write_bytes(b"stand-in")
    monkeypatch.setattr("gputui.commands.report.open_run", lambda _p: ListRecording(snaps))
    monkeypatch.setenv("GPUTUI_DATA_DIR", str(tmp_path / "data"))
    return path


def fit(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["fit", *argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def estimate(model: str) -> int:
    """What gputui.fit's check says for that model on the recording's card."""
    from gputui.catalog import load_catalog
    from gputui.fit import FitRequest, check, load_any, targets_from_snapshot

    snap = simulated_run(TRAINING, 1, Path(__import__("tempfile").mkdtemp()))[0]
    (target, _) = targets_from_snapshot(snap, load_catalog())
    (m,) = [m for m in load_any(Path(MODELS)) if m.name == model]
    answer = check(FitRequest(m, (target,), precision=m.precision, backend="cuda"))
    b = answer.checks[0].chosen.breakdown
    assert b.total == b.tensor_bytes + b.cuda_context + b.allocator and b.cuda_context > 0
    return int(b.total)


def test_json_sets_the_whole_estimate_beside_the_observed_peak(
    capsys: pytest.CaptureFixture[str], recording: Path
) -> None:
    code, out, err = fit(
        capsys, MODELS, "--model", "vgg16", "--against", str(recording), "--pid", "4242", "--json"
    )
    assert code == 0, err
    doc = json.loads(out)
    proc = doc["process"]
    assert (proc["pid"], proc["gpu"], proc["observed_peak_bytes"]) == (4242, 0, PEAK)
    assert proc["card"] == "GeForce RTX 3090" and not proc["ended"]  # the catalog card
    (row,) = doc["comparisons"]
    assert row["estimate_bytes"] == estimate("vgg16")
    assert row["estimate_bytes"] == (
        row["tensor_bytes"] + row["cuda_context_bytes"] + row["allocator_bytes"]
    )
    assert row["ratio"] == pytest.approx(PEAK / row["estimate_bytes"])
    assert doc["history"] is None and doc["kept"] is True


def test_text_and_the_history_later_estimates_read(
    capsys: pytest.CaptureFixture[str], recording: Path
) -> None:
    argv = [MODELS, "--model", "vgg16", "--against", str(recording), "--pid", "4242"]
    code, out, err = fit(capsys, *argv)
    assert code == 0, err
    assert "observed peak: 10.00 GiB (NVML's used memory: CUDA context + allocator reserved)" in out
    ratio = PEAK / estimate("vgg16")
    pct = round((ratio - 1) * 100)
    word = "more" if pct > 0 else "less"
    assert f"{ratio:.2f} ({abs(pct)} % {word} than predicted)" in out
    assert "on this machine" not in out  # no history before the first comparison
    code, out, _ = fit(capsys, *argv)  # the same comparison again replaces itself
    assert f"used {abs(pct)} % {word} than predicted (median of 1 on GeForce RTX 3090" in out
    # a plain estimate on that card shows it too
    code, out, _ = fit(capsys, MODELS, "--model", "vgg16", "--gpu", "RTX 3090")
    assert f"on this machine, jobs like this used {abs(pct)} % {word} than predicted" in out
    code, out, _ = fit(capsys, MODELS, "--model", "vgg16", "--gpu", "RTX 3090", "--json")
    page = json.loads(out)
    (history,) = page["observed_history"]
    assert history["jobs"] == 1 and history["median_ratio"] == pytest.approx(ratio)
    from gputui.fit.report.schema import FitDocument

    FitDocument.model_validate(page)  # the documented schema has it


def test_a_file_gputui_did_not_write_is_left_alone(
    capsys: pytest.CaptureFixture[str], recording: Path, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    mine = data / "observed-peaks.json"
    mine.write_text('{"my": "notes"}')
    code, out, _ = fit(
        capsys, MODELS, "--model", "vgg16", "--against", str(recording), "--pid", "4242"
    )
    assert code == 0 and "comparison not kept: " in out
    assert mine.read_text() == '{"my": "notes"}'


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (["--pid", "4242"], "gputui: --pid: only with --against RECORDING\n"),
        (
            ["--against", "REC"],
            "gputui: --against <REC>: needs --pid PID, the process to compare with\n",
        ),
        (
            ["--against", "REC", "--pid", "x"],
            "gputui: --pid: 'x' is not a process id (1 to 4194304)\n",
        ),
    ],
)
def test_bad_input_is_one_line(
    capsys: pytest.CaptureFixture[str], recording: Path, argv: list[str], line: str
) -> None:
    argv = [str(recording) if a == "REC" else a for a in argv]
    code, out, err = fit(capsys, MODELS, *argv)
    assert (code, out, err) == (2, "", line.replace("<REC>", str(recording)))


def test_a_process_not_in_the_recording(
    capsys: pytest.CaptureFixture[str], recording: Path
) -> None:
    code, _, err = fit(capsys, MODELS, "--against", str(recording), "--pid", "77")
    assert code == 1 and err == "gputui: --pid: no process 77 in the recording's range\n"


def test_a_hugging_face_config_with_its_own_workload(
    capsys: pytest.CaptureFixture[str], recording: Path
) -> None:
    config = str(Path(MODELS).parent / "llm" / "gpt2.json")
    code, out, err = fit(capsys, config, "--against", str(recording), "--pid", "4242", "--json")
    assert code == 0, err
    (row,) = json.loads(out)["comparisons"]
    assert row["model"] and row["cuda_context_bytes"] > 0
    assert row["estimate_bytes"] == (
        row["tensor_bytes"] + row["cuda_context_bytes"] + row["allocator_bytes"]
    )
