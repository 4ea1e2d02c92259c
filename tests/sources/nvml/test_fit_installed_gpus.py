"""`gputui fit` against the installed GPUs: through the NVML source and a
fake pynvml, every installed GPU appears in the answer; a lost or unreadable one is listed
with its reason, and the exit status says the question was answered only in part (3)."""

from __future__ import annotations

import json
from pathlib import Path

import pynvml
import pytest

from gputui.cli import main

from .conftest import FakeNvml

EXAMPLES = str(Path(__file__).resolve().parents[3] / "examples" / "models.toml")
Capsys = pytest.CaptureFixture[str]


def _fit(capsys: Capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["fit", EXAMPLES, "--model", "mnist-cnn", *argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_all_readable_gpus_fit_exit_0(capsys: Capsys, fake_nvml: FakeNvml) -> None:
    code, out, _ = _fit(capsys)
    assert code == 0
    assert "GPU 0:" in out and "GPU 1:" in out and "unavailable" not in out


def test_lost_gpu_is_listed_with_its_reason_and_exit_3(capsys: Capsys, fake_nvml: FakeNvml) -> None:
    fake_nvml.gpus[1].lost = True
    code, out, _ = _fit(capsys)
    assert code == 3
    (line,) = [ln for ln in out.splitlines() if ln.startswith("GPU 1:")]
    assert "unavailable" in line and "lost" in line.lower()
    assert "GPU 0:" in out and "mnist-cnn:" in out  # the readable GPU is still answered


def test_index_of_an_unreadable_gpu_names_its_reason(capsys: Capsys, fake_nvml: FakeNvml) -> None:
    fake_nvml.gpus[1].errors["nvmlDeviceGetMemoryInfo_v2"] = pynvml.NVML_ERROR_NOT_SUPPORTED
    code, out, err = _fit(capsys, "--index", "1")
    assert code == 3 and err == ""
    assert "GPU 1:" in out and "NotSupported" in out
    assert "no GPU with readable memory" not in out + err
    assert "GPU 0:" not in out  # only the GPU asked about


def test_json_lists_unavailable_gpus(capsys: Capsys, fake_nvml: FakeNvml) -> None:
    fake_nvml.gpus[0].lost = True
    code, out, _ = _fit(capsys, "--json")
    assert code == 3
    data = json.loads(out)
    assert [u["index"] for u in data["unavailable_gpus"]] == [0]
    assert data["unavailable_gpus"][0]["reason"]
    assert [g["index"] for g in data["gpus"]] == [1]
    assert data["all_fit"] is False
