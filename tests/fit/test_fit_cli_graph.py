"""`gputui fit` on graphs and Keras files: --device, --optimizer, --mode, sidecars."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gputui.commands.fit import args as fit_args
from tests.conftest import run_fit

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = str(ROOT / "examples" / "models.toml")
FIXTURES = ROOT / "tests" / "fixtures" / "keras"


def test_keras_json_resnet50_on_a_card(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_fit(capsys, str(FIXTURES / "resnet50.json"), "--gpu", "RTX 3090", "--json")
    assert code == 0
    data = json.loads(out)
    (model,) = data["models"]
    assert model["kind"] == "graph" and model["model"]["type"] == "functional"
    assert model["model"]["params"] == 25_636_712
    assert data["backend"] == "cuda" and model["workload"]["backend"] == "cuda"
    (est,) = model["estimates"]
    assert est["peak_tensors"] and {"layer", "what", "bytes"} <= set(est["peak_tensors"][0])
    names = {layer["name"] for layer in model["model"]["layers"]}
    assert "conv1_conv" in names


def test_device_cpu_drops_the_cuda_overheads(capsys: pytest.CaptureFixture[str]) -> None:
    args = (
        EXAMPLES,
        "--gpu",
        "RTX 3090",
        "--model",
        "resnet20-cifar",
        "--precision",
        "fp32",
        "--json",
    )
    _, cuda_out, _ = run_fit(capsys, *args)
    code, cpu_out, _ = run_fit(capsys, *args, "--device", "cpu")
    assert code == 0
    cuda = json.loads(cuda_out)["models"][0]["estimates"][0]
    cpu = json.loads(cpu_out)
    assert cpu["backend"] == "cpu"
    est = cpu["models"][0]["estimates"][0]
    assert est["breakdown"]["cuda_context"] == 0 and est["breakdown"]["allocator"] == 0
    assert est["peak_bytes"] < cuda["peak_bytes"]
    _, text, _ = run_fit(capsys, *args[:-1], "--device", "cpu")
    assert "backend: cpu" in text


def test_optimizer_mode_and_batch_flags_override(capsys: pytest.CaptureFixture[str]) -> None:
    base = (EXAMPLES, "--gpu", "RTX 3090", "--model", "text-transformer", "--json")
    _, sgd, _ = run_fit(capsys, *base, "--optimizer", "sgd")
    _, adam, _ = run_fit(capsys, *base, "--optimizer", "adam")
    _, inf, _ = run_fit(capsys, *base, "--mode", "inference", "--batch-size", "8")
    s, a, i = (json.loads(x)["models"][0] for x in (sgd, adam, inf))
    assert s["workload"]["optimizer"] == "sgd" and a["workload"]["optimizer"] == "adam"
    assert s["estimates"][0]["breakdown"]["optimizer_state"] == 0
    assert a["estimates"][0]["breakdown"]["optimizer_state"] > 0
    assert i["workload"]["mode"] == "inference" and i["workload"]["batch_size"] == 8


def test_mode_choices_tolerate_a_later_generate(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(fit_args, "MODE_CHOICES", [*fit_args.MODE_CHOICES, "generate"])
    code, _, err = run_fit(capsys, EXAMPLES, "--gpu", "RTX 3090", "--mode", "generate")
    assert code == 2 and "--mode generate: applies to language models only" in err
    assert "Traceback" not in err


def test_toml_sidecar_reads_the_keras_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "m.json").write_text((FIXTURES / "seq2seq_lstm.json").read_text())
    counts = json.loads((FIXTURES / "seq2seq_lstm.counts.json").read_text())
    shapes = counts.get("input_shapes") or {}
    table = ", ".join(f"{k} = {list(v)}" for k, v in shapes.items())
    side = tmp_path / "models.toml"
    side.write_text(
        '[[model]]\nname = "s2s"\nkeras = "m.json"\nbatch_size = 16\noptimizer = "rmsprop"\n'
        + (f"input_shapes = {{ {table} }}\n" if table else "")
    )
    code, out, err = run_fit(capsys, str(side), "--gpu", "RTX 3090", "--json")
    assert code == 0, err
    (model,) = json.loads(out)["models"]
    assert model["name"] == "s2s" and model["workload"]["batch_size"] == 16
    assert model["workload"]["optimizer"] == "rmsprop"
    assert model["model"]["params"] == counts["total"]
    side.write_text('[[model]]\nname = "s2s"\nkeras = "nope.json"\n')
    code, _, err = run_fit(capsys, str(side), "--gpu", "RTX 3090")
    assert code == 2 and "no such Keras model file" in err


def test_mixed_precision_policy_is_honoured(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_fit(
        capsys, str(FIXTURES / "mixed_float16_cnn.json"), "--gpu", "RTX 3090", "--json"
    )
    assert code == 0
    model = json.loads(out)["models"][0]
    (est,) = model["estimates"]
    assert est["recommended_precision"] == "amp_fp16"
    assert [e["precision"] for e in est["precisions"]] == ["amp_fp16"]


def test_bad_input_shape_flag_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_fit(
        capsys, str(FIXTURES / "resnet50.json"), "--gpu", "RTX 3090", "--input-shape", "x=a,b"
    )
    assert code == 2 and err.count("\n") == 1 and "--input-shape" in err


def test_all_cards_with_the_functional_examples(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_fit(capsys, EXAMPLES, "--all-cards", "--json")
    assert code == 0
    ranked = {r["name"] for r in json.loads(out)["models"] if r["ranking"]}
    assert {"resnet20-cifar", "unet-small", "seq2seq-lstm", "text-transformer"} <= ranked
