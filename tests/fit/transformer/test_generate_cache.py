"""The KV cache of `--mode generate` is exactly K and V, as transformers 5.24's DynamicCache holds them.

The figures are the formula 2 x layers x kv_heads x head_dim x tokens x bytes x batch,
written out from each config's numbers (not from gputui's own helpers), at the two
moments that can be generate's peak: the prefill (every layer, sliding ones included,
holds the whole prompt's K and V) and the last decode step (prompt + new - 1 tokens,
a sliding layer min(that, window)). benchmarks/hf_generate_memory.py measured them.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from gputui.fit.transformer.estimate import memory
from gputui.fit.transformer.workload import Workload

FP32 = dict(precision="fp32", weights="fp32", kv_dtype="fp32", backend="cpu")


def phases(model, wl):
    sm = memory(model, wl).stages[0]
    return sm, {ph.name: ph for ph in sm.phases}


def prefill_kv(sm, batch, seq) -> float:
    values = {sm.parts(ph, batch, seq).kv_cache for ph in sm.phases if ph.kv == "prompt"}
    assert len(values) == 1  # every moment of the prefill sees the same cache
    return values.pop()


@pytest.mark.parametrize(
    ("name", "layers", "kv_heads", "head_dim"),
    [("gpt2", 12, 12, 64), ("pythia-410m", 24, 16, 64), ("phi-3-mini-4k", 32, 32, 96)],
)
def test_a_fused_qkv_model_caches_exactly_k_and_v(example, name, layers, kv_heads, head_dim):
    # before: 1.5x, the cache assumed to hold views of the fused qkv output
    model = example(name)
    wl = Workload(mode="generate", batch_size=2, seq_len=256, new_tokens=16, **FP32)
    sm, by_name = phases(model, wl)
    assert prefill_kv(sm, 2, 256) == 2 * layers * kv_heads * head_dim * 256 * 4 * 2
    decode = sm.parts(by_name["decode, cache full"], 2, 256)
    assert decode.kv_cache == 2 * layers * kv_heads * head_dim * (256 + 16 - 1) * 4 * 2


def test_the_cache_after_generation_holds_prompt_plus_new_minus_one(example) -> None:
    model = example("llama-3-8b")  # 32 layers, 8 kv heads of 128
    wl = Workload(mode="generate", batch_size=3, seq_len=1000, new_tokens=100, kv_dtype="bf16")
    sm, by_name = phases(model, wl)
    parts = sm.parts(by_name["decode, cache full"], 3, 1000)
    assert parts.kv_cache == 2 * 32 * 8 * 128 * 1099 * 2 * 3
    # the step's torch.cat: one layer's K of the old length beside the new one
    assert parts.workspace == 8 * 128 * 1098 * 2 * 3


def test_sliding_layers_hold_the_whole_prompt_at_the_prefill_then_the_window(example) -> None:
    # Phi-3-mini-4k: every layer slides over 2047 tokens (DynamicSlidingWindowLayer)
    model = example("phi-3-mini-4k")
    wl = Workload(mode="generate", batch_size=1, seq_len=3000, new_tokens=64, kv_dtype="fp16")
    sm, by_name = phases(model, wl)
    per_token = 2 * 32 * 32 * 96 * 2
    assert prefill_kv(sm, 1, 3000) == per_token * 3000  # the view keeps the prompt's tensor
    assert sm.parts(by_name["decode, cache full"], 1, 3000).kv_cache == per_token * 2047


def test_gemma3_alternation_at_prefill_and_after_decode(example) -> None:
    # Gemma 3 1B: 26 layers, 1 kv head of 256, window 512 on 5 of every 6 layers
    model = example("gemma-3-1b")
    cfg = model.config
    sliding = sum(cfg.is_sliding(i) for i in range(26))
    assert sliding == 22
    wl = Workload(mode="generate", batch_size=2, seq_len=2048, new_tokens=32, kv_dtype="bf16")
    sm, by_name = phases(model, wl)
    per_layer_token = 2 * 1 * 256 * 2 * 2  # K and V, bf16, two sequences
    assert prefill_kv(sm, 2, 2048) == 26 * per_layer_token * 2048
    after = sm.parts(by_name["decode, cache full"], 2, 2048).kv_cache
    assert after == per_layer_token * (4 * (2048 + 32 - 1) + 22 * 512)


def test_a_paged_cache_and_llama_cpp_keep_their_own_rules(example) -> None:
    model = example("llama-3-8b")
    wl = Workload(mode="generate", seq_len=1000, new_tokens=100, paged_block=16)
    sm, by_name = phases(model, wl)
    # vLLM: prompt + new tokens in whole blocks of 16, no concatenation
    assert sm.parts(by_name["decode, cache full"], 1, 1000).kv_cache == 2 * 32 * 8 * 128 * 2 * 1104
    gguf = replace(model, kind="gguf")
    sm, by_name = phases(gguf, replace(wl, paged_block=None))
    assert sm.parts(by_name["decode, cache full"], 1, 1000).kv_cache == 2 * 32 * 8 * 128 * 2 * 1100


def test_the_fused_qkv_output_is_an_activation_of_the_attention_moment(example) -> None:
    # GPT-2 small, eager attention on a long prompt: the attention moment is the prefill's peak;
    # its q, k, v (slices of one c_attn output) are activations, the cache only K and V
    model = example("gpt2")
    wl = Workload(mode="generate", batch_size=1, seq_len=1000, new_tokens=8,
                  attention="eager", **FP32)  # fmt: skip
    mem = memory(model, wl)
    phase, b = mem.breakdown(1, 1000)
    assert phase == "prefill, attention"
    assert b.kv_cache == 2 * 12 * 12 * 64 * 1000 * 4
    qkv_output = 3 * 768 * 1000 * 4
    scores = 12 * 1000 * 1000 * 4  # one (seq x seq) per head in fp32
    assert b.activations >= qkv_output + scores


def test_prefill_holds_what_transformers_keeps_beside_the_layer(example) -> None:
    # Phi-3's fused gate_up: one tensor of twice the MLP width, alive with act(gate) and the
    # product; the embedding output is a local of the model's forward (measured: 88.4 MiB
    # of activations at b2 s256 with 4 layers, benchmarks/hf_generate_memory.py)
    model = example("phi-3-mini-4k")
    wl = Workload(mode="generate", batch_size=2, seq_len=256, new_tokens=8, **FP32)
    sm, _ = phases(model, wl)
    mlp = max(
        (sm.parts(ph, 2, 256) for ph in sm.phases if ph.name == "prefill"),
        key=lambda p: p.activations,
    )
    tokens = 2 * 256
    held = 4 * tokens * (4 * 3072 + 4 * 8192)  # 4 hidden states, gate_up + act + product
    assert mlp.activations >= held


def test_an_fp32_model_caches_in_fp32_unless_told(capsys) -> None:
    # transformers writes K and V in the projections' dtype: GPT-2's config is float32
    from gputui.cli import main

    gpt2 = str(Path(__file__).resolve().parents[3] / "examples/llm/gpt2.json")
    argv = ["fit", gpt2, "--mode", "generate", "--device", "cpu", "--seq-len", "512",
            "--new-tokens", "32", "--batch-size", "4", "--gpu", "RTX 4090", "--json"]  # fmt: skip
    assert main(argv) == 0
    doc = json.loads(capsys.readouterr().out)
    (model,) = doc["models"]
    assert model["workload"]["kv_dtype"] == "fp32"
    (est,) = model["estimates"]
    assert est["breakdown"]["kv_cache"] == 2 * 12 * 768 * 512 * 4 * 4
    assert main([*argv, "--kv-dtype", "fp16"]) == 0
    (est,) = json.loads(capsys.readouterr().out)["models"][0]["estimates"]
    assert est["breakdown"]["kv_cache"] == 2 * 12 * 768 * 512 * 2 * 4
