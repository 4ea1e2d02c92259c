"""The software a transformer job runs under, named and modelled: the training loop
(--loop), the optimizer's kernels (--optimizer-impl), FSDP's optimizer state and the
serving engine (--engine)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from gputui.fit.core.target import Target
from gputui.fit.transformer.estimate import estimate, memory
from gputui.fit.transformer.workload import Workload
from tests.conftest import run_fit

ROOT = Path(__file__).resolve().parents[3]
LLAMA3 = str(ROOT / "examples/llm/llama-3-8b.json")
LLAMA32 = str(ROOT / "examples/llm/llama-3.2-1b.json")
QWEN7 = str(ROOT / "examples/llm/qwen2.5-7b.json")
GGUF = str(ROOT / "tests/fixtures/gguf/tiny-llama-q8_0.gguf")
CONVNET = str(ROOT / "tests/fixtures/keras/mnist_convnet.json")
GIB = 2**30


def _phases(model, wl: Workload) -> dict[str, float]:
    (sm,) = memory(model, wl).stages
    return {ph.name: sm.parts(ph, wl.batch_size, wl.seq_len).total for ph in sm.phases}


def test_plain_loop_holds_the_logits_through_the_step_and_the_trainer_does_not(example) -> None:
    model = example("llama-3.2-1b")
    wl = Workload(mode="train", batch_size=2, seq_len=512, precision="fp32", backend="cpu")
    plain = _phases(model, wl)
    trainer = _phases(model, replace(wl, loop="trainer"))
    logits = 4 * model.config.vocab_size * 2 * 512  # fp32 logits of every token
    for name in ("loss backward", "backward, last layer", "optimizer step"):
        assert plain[name] - trainer[name] == pytest.approx(logits)


def test_loop_is_named_in_text_and_json(capsys: pytest.CaptureFixture[str]) -> None:
    args = (LLAMA32, "--gpu", "H100 SXM5 80GB", "--mode", "train")
    _, out, _ = run_fit(capsys, *args)
    assert "plain loop (the outputs' logits held through backward and step)" in out
    _, out, _ = run_fit(capsys, *args, "--loop", "trainer", "--json")
    (data,) = json.loads(out)["models"]
    assert data["assumptions"]["loop"] == "trainer"


def test_loop_needs_training_and_a_transformer(capsys: pytest.CaptureFixture[str]) -> None:
    rc, _, err = run_fit(capsys, LLAMA32, "--gpu", "RTX 4090", "--loop", "trainer")
    assert rc == 2 and "--loop: only with --mode train" in err
    rc, _, err = run_fit(capsys, CONVNET, "--gpu", "RTX 4090", "--loop", "trainer")
    assert rc == 2 and "--loop: applies to transformer models" in err


def test_loop_from_a_models_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    toml = tmp_path / "m.toml"
    toml.write_text(
        '[[model]]\nname = "l"\nkind = "transformer"\n'
        f'hf_config = "{LLAMA32}"\nmode = "train"\nloop = "trainer"\n'
    )
    _, out, _ = run_fit(capsys, str(toml), "--gpu", "H100 SXM5 80GB", "--json")
    (data,) = json.loads(out)["models"]
    assert data["assumptions"]["loop"] == "trainer"


def test_engine_from_a_models_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    toml = tmp_path / "m.toml"
    toml.write_text(
        '[[model]]\nname = "q"\nkind = "transformer"\n'
        f'hf_config = "{QWEN7}"\nseq_len = 32768\nengine = "vllm"\n'
    )
    _, out, _ = run_fit(capsys, str(toml), "--gpu", "L4", "--json")
    (data,) = json.loads(out)["models"]
    assert data["assumptions"]["engine"] == "vllm"
    assert data["estimates"][0]["max_batch_size"] == 3
    toml.write_text(toml.read_text() + 'mode = "train"\n')
    rc, _, err = run_fit(capsys, str(toml), "--gpu", "L4")
    assert rc == 2 and "engine: only with mode" in err


def test_fused_adamw_has_no_parameter_sized_temporary(capsys: pytest.CaptureFixture[str]) -> None:
    args = (LLAMA3, "--gpu", "A100 SXM4 80GB", "--mode", "train", "--gpus", "2",
            "--parallel", "fsdp", "--grad-checkpointing", "--json")  # fmt: skip
    _, out, _ = run_fit(capsys, *args)
    foreach = json.loads(out)["models"][0]["estimates"][0]
    rc, out, _ = run_fit(capsys, *args, "--optimizer-impl", "fused")
    fused = json.loads(out)["models"][0]["estimates"][0]
    assert foreach["peak_phase"] == "optimizer step" and foreach["verdict"] == "does not fit"
    # the fp32 temporary of half the parameters is gone; the backward is the peak now
    assert foreach["peak_bytes"] - fused["peak_bytes"] > 14 * GIB
    assert fused["peak_bytes"] < 67 * GIB and fused["verdict"] == "fits" and rc == 0


def test_fsdp_shards_an_8bit_optimizer_state(example) -> None:
    model = example("llama-3-8b")
    wl = Workload(mode="train", gpus=2, parallel="fsdp", grad_checkpointing=True)
    adamw = memory(model, wl).breakdown(1, 2048)[1].optimizer_state
    eight = memory(model, replace(wl, optimizer="adamw_8bit")).breakdown(1, 2048)[1]
    assert eight.optimizer_state == pytest.approx(adamw * (2 + 8 / 256) / 8)


def test_vllm_pool_is_ninety_percent_less_weights(capsys: pytest.CaptureFixture[str]) -> None:
    args = (QWEN7, "--gpu", "L4", "--seq-len", "32768", "--mode", "generate")
    _, out, _ = run_fit(capsys, *args, "--engine", "vllm", "--json")
    (data,) = json.loads(out)["models"]
    est = data["estimates"][0]
    assert data["assumptions"]["engine"] == "vllm"
    assert data["workload"]["paged_block"] == 16
    assert est["limit_bytes"] == int(0.9 * 24 * GIB)  # the catalog's L4: 24 GiB
    assert est["max_batch_size"] == 3
    _, out, _ = run_fit(capsys, *args, "--engine", "vllm")
    assert "KV pool of about" in out and "holds 3 sequence(s) of 33,024 tokens" in out


def test_gguf_runs_in_llama_cpp_with_its_cache_allocated_whole(
    capsys: pytest.CaptureFixture[str], example
) -> None:
    _, out, _ = run_fit(capsys, GGUF, "--gpu", "RTX 4090", "--json")
    (data,) = json.loads(out)["models"]
    assert data["assumptions"]["engine"] == "llama.cpp"
    assert data["workload"]["prefill_chunk"] == 512
    rc, _, err = run_fit(capsys, GGUF, "--gpu", "RTX 4090", "--engine", "hf")
    assert rc == 2 and "--engine hf:" in err
    model = example("llama-3.2-1b")
    wl = Workload(seq_len=1024, new_tokens=1024, engine="llama.cpp", prefill_chunk=512)
    phase, b = memory(model, wl).breakdown(1, 1024)
    full = memory(model, replace(wl, seq_len=2048, new_tokens=1)).breakdown(1, 2048)[1]
    assert b.kv_cache == pytest.approx(full.kv_cache, rel=0.001)  # 2048 tokens at the prefill
    e = estimate(model, wl, Target("24 GiB", 24 * GIB))
    assert e.breakdown.kv_cache == b.kv_cache and e.limit_bytes == 24 * GIB


def test_hints_try_the_cheap_savers_before_more_cards(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run_fit(capsys, LLAMA32, "--gpu", "RTX 4090", "--mode", "train")
    hints = out[out.index("hints") :]
    assert "the cheapest change that fits: --optimizer adamw_8bit" in hints
    # fused kernels and checkpointing alone save nothing where the loss backward (the
    # logits over a 128k vocabulary) is the peak: not offered
    assert "with --optimizer-impl fused:" not in hints
    assert "with --grad-checkpointing:" not in hints
    order = ["--optimizer adamw_8bit:", "--precision bf16:",
             "--optimizer adamw_8bit --grad-checkpointing --precision bf16:", "--lora-rank 16:", "--method qlora", "--gpus 2"]  # fmt: skip
    places = [hints.index(f"with {flag}") for flag in order]
    assert places == sorted(places)
    assert "--precision bf16: peak 14.76 GiB, fits" in hints


def test_ranking_counts_one_card_with_a_saver(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run_fit(capsys, LLAMA32, "--all-cards", "--mode", "train", "--json")
    (data,) = json.loads(out)["models"]
    row = next(r for r in data["ranking"] if r["card"] == "GeForce RTX 4090")
    assert not row["fits"] and row["cards_needed"] == 1
    assert row["cards_split"] == "with --optimizer adamw_8bit"


def test_tensor_parallel_hint_agrees_with_asking_for_it(capsys: pytest.CaptureFixture[str]) -> None:
    v3 = str(ROOT / "examples/llm/deepseek-v3.json")
    _, out, _ = run_fit(capsys, v3, "--gpu", "H200 SXM 141GB")
    assert "with tp: no count" not in out
    line = next(x for x in out.splitlines() if "with --gpus 16 --parallel tp:" in x)
    assert "fits" in line and "beyond one node" in line
    rc, out, _ = run_fit(capsys, v3, "--gpu", "H200 SXM 141GB", "--gpus", "16", "--parallel", "tp")
    figure = line.split(": peak ")[1].split(" per GPU")[0]
    assert rc == 0 and f"peak {figure} during" in out


def test_a_per_tensor_loop_keeps_only_the_largest_tensors_temporaries(example) -> None:
    model = example("llama-3.2-1b")
    wl = Workload(mode="train", optimizer_impl="foreach")
    step = {i: _phases(model, replace(wl, optimizer_impl=i))["optimizer step"]
            for i in ("foreach", "loop", "fused")}  # fmt: skip
    assert step["fused"] < step["loop"] < step["foreach"]
    largest = model.config.vocab_size * model.config.hidden_size
    assert step["loop"] - step["fused"] == pytest.approx(2 * largest * 4)


def test_gemma2_softcap_keeps_a_second_logits_tensor_for_the_backward() -> None:
    from gputui.fit.importers.hfkeys import from_hf_dict
    from gputui.fit.transformer.model import from_config

    raw = json.loads((ROOT / "examples/llm/gemma-2-9b.json").read_text())
    capped = from_config(from_hf_dict(raw), "g", "test")
    plain = from_config(from_hf_dict({**raw, "final_logit_softcapping": None}), "g", "test")
    wl = Workload(mode="train", batch_size=1, seq_len=256, precision="fp32", backend="cpu")
    extra = _phases(capped, wl)["loss backward"] - _phases(plain, wl)["loss backward"]
    assert extra == 4 * raw["vocab_size"] * 256


def test_gemma_2_runs_eager_attention_unless_asked(capsys: pytest.CaptureFixture[str]) -> None:
    """transformers' Gemma 2 class does not support sdpa: from_pretrained gives eager,
    which keeps every layer's attention probabilities; other types default to sdpa."""
    gemma2 = str(ROOT / "examples" / "llm" / "gemma-2-9b.json")
    args = ("--gpu", "H100 SXM5 80GB", "--mode", "inference", "--seq-len", "8192", "--json")
    _, out, _ = run_fit(capsys, gemma2, *args)
    (eager,) = json.loads(out)["models"]
    assert eager["workload"]["attention"] == "eager"
    _, out, _ = run_fit(capsys, gemma2, *args, "--attention", "sdpa")
    (sdpa,) = json.loads(out)["models"]
    assert sdpa["workload"]["attention"] == "sdpa"
    assert eager["estimates"][0]["peak_bytes"] > sdpa["estimates"][0]["peak_bytes"]
    _, out, _ = run_fit(capsys, LLAMA32, *args)
    assert json.loads(out)["models"][0]["workload"]["attention"] == "sdpa"
