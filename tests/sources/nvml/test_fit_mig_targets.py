"""`gputui fit` on a MIG GPU at the pynvml boundary: the instances are the
targets; a MIG GPU with no instance listed, or an instance whose memory is unreadable, is
named as unavailable with its reason (exit 3), never checked as the whole card."""

from __future__ import annotations

import json
from pathlib import Path

import pynvml
import pytest

from gputui.cli import main

from .conftest import FakeMig, FakeNvml

EXAMPLES = str(Path(__file__).resolve().parents[3] / "examples" / "models.toml")
GiB = 1 << 30
MiB = 1 << 20
Capsys = pytest.CaptureFixture[str]


def _fit_json(capsys: Capsys, *argv: str) -> tuple[int, dict[str, object]]:
    code = main(["fit", EXAMPLES, "--model", "mnist-cnn", "--json", *argv])
    return code, json.loads(capsys.readouterr().out)


def _mig_on(fake: FakeNvml) -> None:
    g = fake.gpus[1]
    g.mig = pynvml.NVML_DEVICE_MIG_ENABLE
    g.errors["nvmlDeviceGetUtilizationRates"] = pynvml.NVML_ERROR_NOT_SUPPORTED


def test_instances_are_the_targets(capsys: Capsys, fake_nvml: FakeNvml) -> None:
    _mig_on(fake_nvml)
    g = fake_nvml.gpus[1]
    g.migs = [
        FakeMig(g, 0, gpu_instance=1, memory_used=22 * GiB),
        FakeMig(
            g,
            1,
            gpu_instance=2,
            compute_instance=0,
            name="NVIDIA A100-SXM4-80GB MIG 2g.20gb",
            memory_total=19968 * MiB,
            memory_used=12 * GiB,
        ),
    ]
    code, data = _fit_json(capsys, "--index", "1")
    assert code == 0
    gpus = data["gpus"]
    assert isinstance(gpus, list)
    assert [(t["mig"]["profile"], t["mig"]["gpu_instance_id"]) for t in gpus] == [
        ("3g.40gb", 1),
        ("2g.20gb", 2),
    ]
    assert [t["memory_free_bytes"] for t in gpus] == [
        40192 * MiB - 22 * GiB,
        19968 * MiB - 12 * GiB,
    ]
    assert all(t["catalog_card"] is None for t in gpus)  # no whole-card speed for a slice


def test_mig_on_without_instances_is_unavailable_exit_3(
    capsys: Capsys, fake_nvml: FakeNvml
) -> None:
    _mig_on(fake_nvml)
    code, data = _fit_json(capsys)
    assert code == 3
    (u,) = data["unavailable_gpus"]  # type: ignore[misc]
    assert u["index"] == 1 and "MIG mode is on" in u["reason"]
    assert [t["index"] for t in data["gpus"]] == [0]  # type: ignore[union-attr]


def test_instance_with_unreadable_memory_is_named(capsys: Capsys, fake_nvml: FakeNvml) -> None:
    _mig_on(fake_nvml)
    g = fake_nvml.gpus[1]
    bad = FakeMig(g, 1, gpu_instance=2, name="NVIDIA A100-SXM4-80GB MIG 2g.20gb")
    bad.errors["nvmlDeviceGetMemoryInfo"] = pynvml.NVML_ERROR_NOT_SUPPORTED
    g.migs = [FakeMig(g, 0, gpu_instance=1), bad]
    code, data = _fit_json(capsys, "--index", "1")
    assert code == 3
    (u,) = data["unavailable_gpus"]  # type: ignore[misc]
    assert "2g.20gb" in u["name"] and "memory" in u["reason"]
    assert [t["mig"]["profile"] for t in data["gpus"]] == ["3g.40gb"]  # type: ignore[union-attr]
