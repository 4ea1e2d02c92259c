"""`gputui fit` with transformer inputs, as a user runs it: text, JSON, exit codes, bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_fit

ROOT = Path(__file__).resolve().parents[3]
LLAMA3 = str(ROOT / "examples/llm/llama-3-8b.json")
GGUF = str(ROOT / "tests/fixtures/gguf/tiny-llama-q8_0.gguf")


def test_lora_on_a_4090(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run_fit(
        capsys, LLAMA3, "--mode", "train", "--lora-rank", "16", "--gpu", "RTX 4090"
    )
    assert "LoRA r=16 on q,k,v,o (13,631,488 trainable)" in out
    assert "GeForce RTX 4090" in out and "weights 14.96 GiB" in out
    assert "longest sequence at batch 1:" in out
    assert rc in (0, 1)


def test_generate_32k_all_cards_json(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run_fit(
        capsys, LLAMA3, "--mode", "generate", "--seq-len", "32768", "--all-cards", "--json",
        "--allow-longer-context",  # Llama-3-8B's context is 8192
    )  # fmt: skip
    (data,) = json.loads(out)["models"]  # one entry, the shape every kind shares
    assert rc == 0 and data["kind"] == "transformer" and data["estimates"] is None
    rows = {r["card"]: r for r in data["ranking"]}
    assert rows["H100 SXM5 80GB"]["fits"] and rows["H100 SXM5 80GB"]["cards_needed"] == 1
    small = [r for r in data["ranking"] if not r["fits"]]
    assert small and all(r["cards_needed"] and r["cards_needed"] > 1 for r in small)
    assert data["ranking"][0]["fits"]


def test_gguf_fixture(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run_fit(capsys, GGUF, "--gpu", "RTX 4090", "--json")
    (data,) = json.loads(out)["models"]
    assert rc == 0
    assert data["model"]["input_kind"] == "gguf" and data["model"]["params"] == 106_816
    assert data["workload"]["weights"] == "gguf-q8_0"
    est = data["estimates"][0]
    assert set(est["breakdown"]) == {
        "weights", "gradients", "optimizer_state", "activations", "kv_cache", "workspace",
        "cuda_context", "allocator",
    }  # fmt: skip
    assert est["breakdown"]["weights"] == 114_432


def test_toml_models_still_go_to_the_layer_checker(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run_fit(capsys, str(ROOT / "examples/models.toml"), "--gpu", "RTX 4090")
    assert "mnist-cnn" in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--mode", "train", "--lora-rank", "0"], "--lora-rank: must be an integer >= 1"),
        (["--seq-len", "-5"], "--seq-len: must be an integer >= 1"),
        (["--mode", "inference", "--new-tokens", "5"], "--new-tokens: only with --mode generate"),
        (["--mode", "generate", "--lora-rank", "8"], "--lora-rank: only with --mode train"),
        (["--weights", "q9_z"], "--weights: unknown weight format 'q9_z'"),
        (["--mode", "train", "--lora-targets", "attn"], "--lora-targets: unknown LoRA target"),
        (["--gpus", "3", "--parallel", "tp"], "--tp 3: must divide the 32 attention heads"),
        (
            ["--parallel", "zero3", "--gpus", "4"],
            "--parallel zero3: data parallelism and sharding are for --mode train",
        ),
        (["--mode", "train", "--method", "qlora", "--weights", "bf16"], "QLoRA trains on a 4-bit"),
        (["--gpus", "2", "--tp", "4"], "--gpus 2: must be a multiple of tp x pp = 4"),
    ],
)
def test_bad_flags_one_line_exit_2(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    rc, out, err = run_fit(capsys, LLAMA3, "--gpu", "RTX 4090", *argv)
    assert rc == 2 and out == ""
    assert message in err and err.count("\n") == 1 and "Traceback" not in err


def test_bad_config_file_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = tmp_path / "config.json"
    p.write_text(
        json.dumps({"model_type": "llama", "hidden_size": 4096, "num_hidden_layers": None})
    )
    rc, _, err = run_fit(capsys, str(p), "--gpu", "RTX 4090")
    assert rc == 2 and "config.json: num_hidden_layers: is required" in err


def test_hf_not_cached(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    rc, _, err = run_fit(capsys, "--hf", "meta-llama/Meta-Llama-3-8B", "--gpu", "RTX 4090")
    assert rc == 2 and "not in the local Hugging Face cache" in err


def test_encoder_cannot_generate(capsys: pytest.CaptureFixture[str]) -> None:
    bert = str(ROOT / "examples/llm/bert-base-uncased.json")
    rc, _, err = run_fit(capsys, bert, "--mode", "generate", "--gpu", "RTX 4090")
    assert rc == 2 and "is an encoder" in err
    rc, out, _ = run_fit(capsys, bert, "--gpu", "RTX 4090", "--seq-len", "512", "--batch-size", "8")
    assert rc == 0 and "inference" in out


def test_multi_gpu_70b(capsys: pytest.CaptureFixture[str]) -> None:
    m = str(ROOT / "examples/llm/llama-3-70b.json")
    longer = "--allow-longer-context"  # Llama-3-70B's context is 8192
    rc1, out1, _ = run_fit(
        capsys, m, "--gpu", "H100 SXM5 80GB", "--seq-len", "32000", "--json", longer
    )
    rc4, out4, _ = run_fit(
        capsys, m, "--gpu", "H100 SXM5 80GB", "--seq-len", "32000", "--gpus", "4", "--json", longer
    )
    one = json.loads(out1)["models"][0]["estimates"][0]
    four = json.loads(out4)["models"][0]["estimates"][0]
    assert rc1 == 1 and not one["fits"]
    assert (
        rc4 == 0
        and four["fits"]
        and four["breakdown"]["weights"] < one["breakdown"]["weights"] / 3.9
    )


def test_training_that_does_not_fit_gets_hints(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run_fit(
        capsys, LLAMA3, "--mode", "train", "--lora-rank", "16", "--gpu", "RTX 4090"
    )
    assert rc == 1 and "does not fit" in out
    hints = out.split("hints:")[1]
    assert "with --grad-checkpointing: peak" in hints and ", fits," in hints
