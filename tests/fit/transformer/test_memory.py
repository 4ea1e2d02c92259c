"""Weights by format, workload memory mechanisms, searches and parallel splits."""

from __future__ import annotations

from dataclasses import replace

import pytest

from gputui.fit.core.target import Target
from gputui.fit.transformer.estimate import estimate, memory
from gputui.fit.transformer.formats import ggml_tensor_bytes, weight_format
from gputui.fit.transformer.layout import Linear
from gputui.fit.transformer.ranking import min_cards
from gputui.fit.transformer.weights import (
    linear_bytes,
    lora_params,
    normalize_targets,
    weight_bytes,
)
from gputui.fit.transformer.workload import Workload

GIB = 2**30


def peak(model, wl, batch=None, seq=None):
    return memory(model, wl).peak(batch or wl.batch_size, seq or wl.seq_len)


def test_bf16_weights_are_two_bytes_per_parameter(llama3) -> None:
    assert weight_bytes(llama3.layout, weight_format("bf16")) == 2 * 8_030_261_248
    assert weight_bytes(llama3.layout, weight_format("fp32")) == 4 * 8_030_261_248


def test_quantized_formats_count_their_scales() -> None:
    lin = Linear("q", 4096, 4096)
    n = 4096 * 4096
    assert linear_bytes(lin, weight_format("nf4")) == n * 4.5 / 8  # fp32 absmax per 64
    assert linear_bytes(lin, weight_format("nf4-dq")) == pytest.approx(n * 4.127 / 8, rel=1e-3)
    # GPTQ int4 g128: packed weights + fp16 scale and 4-bit zero per group + int32 g_idx per input
    assert linear_bytes(lin, weight_format("gptq")) == n / 2 + n / 128 * 2 + n / 128 / 2 + 4096 * 4
    assert linear_bytes(lin, weight_format("int8")) == n + 4096 * 4  # fp32 scale per row
    assert linear_bytes(lin, weight_format("q4_k")) == n * 144 / 256


def test_ggml_block_sizes() -> None:
    assert ggml_tensor_bytes(8, 4096) == 4096 // 32 * 34  # Q8_0
    assert ggml_tensor_bytes(12, 4096) == 4096 // 256 * 144  # Q4_K
    assert ggml_tensor_bytes(14, 4096) == 4096 // 256 * 210  # Q6_K


def test_quantized_model_keeps_embeddings_and_head_16_bit(llama3) -> None:
    lay = llama3.layout
    nf4 = weight_bytes(lay, weight_format("nf4-dq"))
    dense = (lay.embedding + lay.lm_head) * 2
    assert dense < nf4 < dense + lay.linear_weight_params * 4.2 / 8 + lay.params * 0.01


def test_lora_parameters(llama3) -> None:
    # r x (in + out) per targeted linear per layer: q 4096->4096, k,v 4096->1024, o 4096->4096
    per_layer = 16 * ((4096 + 4096) * 2 + (4096 + 1024) * 2)
    assert lora_params(llama3.layout, ("q", "k", "v", "o"), 16) == 32 * per_layer
    assert normalize_targets(["q_proj", "v_proj"]) == ("q", "v")
    with pytest.raises(ValueError, match="unknown LoRA target"):
        normalize_targets(["attn"])


def test_training_methods_order(llama3) -> None:
    base = Workload(mode="train", seq_len=1024)
    full = peak(llama3, base)
    lora = peak(llama3, replace(base, method="lora"))
    qlora = peak(llama3, replace(base, method="qlora", weights="nf4-dq", optimizer="adamw_8bit"))
    assert qlora < lora < full
    # full fine-tune with AdamW under AMP: 4 (fp32 weights) + 4 (grads) + 8 (states) bytes/param
    assert full > 16 * llama3.params


def test_gradient_checkpointing_keeps_only_layer_inputs(llama3) -> None:
    wl = Workload(mode="train", method="lora", seq_len=4096)
    with_ckpt = memory(llama3, replace(wl, grad_checkpointing=True)).breakdown(1, 4096)[1]
    without = memory(llama3, wl).breakdown(1, 4096)[1]
    assert with_ckpt.activations < without.activations / 4


def test_eager_attention_grows_with_the_square_of_the_sequence(llama3) -> None:
    wl = Workload(mode="train", method="lora", seq_len=2048, attention="eager")
    sdpa = replace(wl, attention="sdpa")
    m_e, m_s = memory(llama3, wl), memory(llama3, sdpa)
    grow_e = m_e.peak(1, 4096) - m_e.peak(1, 2048)
    grow_s = m_s.peak(1, 4096) - m_s.peak(1, 2048)
    assert grow_e > 2 * grow_s


def test_generate_counts_the_cache_for_prompt_and_new_tokens(llama3) -> None:
    wl = Workload(mode="generate", seq_len=2048 - 256, new_tokens=256)
    sm = memory(llama3, wl).stages[0]
    by_name = {ph.name: ph for ph in sm.phases}
    decode = by_name["decode, cache full"]
    # transformers never feeds the last generated token back: prompt + new - 1 tokens
    assert sm.parts(decode, 1, wl.seq_len).kv_cache == 256 * 2**20 * 2047 // 2048
    assert sm.parts(decode, 4, wl.seq_len).kv_cache == 4 * 256 * 2**20 * 2047 // 2048
    assert sm.parts(by_name["prefill"], 1, wl.seq_len).kv_cache == 256 * 2**20 * 1792 // 2048


def test_max_batch_and_longest_context_are_exact(llama3) -> None:
    target = Target("24 GiB", 24 * GIB)
    wl = Workload(mode="generate", seq_len=8192, new_tokens=256)
    e = estimate(llama3, wl, target)
    mem = memory(llama3, wl)
    assert mem.peak(e.max_batch_size, 8192) <= 24 * GIB < mem.peak(e.max_batch_size + 1, 8192)
    assert mem.peak(1, e.longest_seq) <= 24 * GIB < mem.peak(1, e.longest_seq + 1)


def test_nothing_fits_reports_zero(llama3) -> None:
    e = estimate(llama3, Workload(mode="generate"), Target("8 GiB", 8 * GIB))
    assert e.verdict == "does not fit" and e.max_batch_size == 0 and e.longest_seq == 0


def test_free_memory_now_is_checked_too(llama3) -> None:
    e = estimate(llama3, Workload(mode="generate"), Target("gpu", 80 * GIB, memory_free=10 * GIB))
    assert e.fits and e.verdict_free == "does not fit" and not e.fits_now


def test_tensor_parallel_splits_weights_and_cache(llama3) -> None:
    one = memory(llama3, Workload(mode="generate", seq_len=8000)).breakdown(1, 8000)[1]
    tp4 = memory(
        llama3, Workload(mode="generate", seq_len=8000, gpus=4, tp=4, parallel="tp")
    ).breakdown(1, 8000)[1]
    assert tp4.weights == pytest.approx(one.weights / 4, rel=0.01)  # norms are replicated
    assert tp4.kv_cache == pytest.approx(one.kv_cache / 4, rel=0.01)


def test_pipeline_parallel_splits_layers(llama3) -> None:
    one = memory(llama3, Workload(mode="inference")).breakdown(1, 2048)[1]
    pp2 = memory(llama3, Workload(mode="inference", gpus=2, pp=2, parallel="pp")).breakdown(
        1, 2048
    )[1]
    assert one.weights / 2 < pp2.weights < one.weights * 0.6  # the last stage also holds the head


def test_zero_stages_shard_model_states(llama3) -> None:
    wl = Workload(mode="train", seq_len=512, gpus=8, precision="amp_bf16")
    states = {}
    for par in ("ddp", "zero1", "zero2", "zero3"):
        _, b = memory(llama3, replace(wl, parallel=par)).breakdown(1, 512)
        states[par] = b
    p = llama3.params
    # DeepSpeed: ZeRO-1 keeps 2P + 2P + 12P/8, ZeRO-3 (2 + 2 + 12)P / 8
    assert states["zero1"].optimizer_state == pytest.approx(12 * p / 8, rel=0.01)
    assert states["zero3"].weights == pytest.approx(2 * p / 8, rel=0.01)
    assert (
        states["zero3"].total < states["zero2"].total < states["zero1"].total < states["ddp"].total
    )


def test_min_cards_for_70b(example) -> None:
    from gputui.catalog import load_catalog

    m = example("llama-3-70b")
    h100 = load_catalog().find("H100 SXM5 80GB")
    n, how = min_cards(m, Workload(mode="generate", seq_len=32768 - 256), h100)
    assert n == 2 and "TP 2" in how  # 141 GB of bf16 weights + 10 GiB of cache over two 80 GB cards


def test_moe_holds_all_experts(example) -> None:
    m = example("mixtral-8x7b")
    _, b = memory(m, Workload(mode="generate", seq_len=512)).breakdown(1, 512)
    assert b.weights == 2 * 46_702_792_704


def test_cpu_sdpa_math_fallback_only_where_pytorch_takes_it(example) -> None:
    gpt2 = example("gpt2")  # attention dropout 0.1, q/k are views of the fused qkv output
    wl = Workload(mode="train", seq_len=512, precision="fp32", backend="cpu")
    cpu_sdpa = memory(gpt2, wl).peak(2, 512)
    assert cpu_sdpa == memory(gpt2, replace(wl, attention="eager")).peak(2, 512)
    cuda = replace(wl, backend="cuda")
    assert memory(gpt2, cuda).peak(2, 512) < memory(gpt2, replace(cuda, attention="eager")).peak(
        2, 512
    )


def test_tied_embedding_gradients_are_summed(example) -> None:
    gpt2 = example("gpt2")
    wl = Workload(mode="train", seq_len=128, precision="fp32", backend="cpu")
    names = {ph.name for ph in memory(gpt2, wl).stages[0].phases}
    assert "backward, embedding" in names
    llama = example("llama-2-7b")  # untied
    assert "backward, embedding" not in {ph.name for ph in memory(llama, wl).stages[0].phases}


@pytest.mark.parametrize(
    "wl",
    [
        Workload(mode="generate", seq_len=3000, new_tokens=100, paged_block=16),
        Workload(mode="train", method="lora", seq_len=1024, grad_accum=4),
        Workload(mode="inference", seq_len=512, gpus=2, pp=2, parallel="pp"),
    ],
)
def test_fast_peak_equals_the_breakdown_total(example, wl) -> None:
    for name in ("llama-3-8b", "gemma-2-9b", "gpt2"):
        mem = memory(example(name), wl, "9.0")
        for batch in (1, 3):
            assert mem.peak(batch, wl.seq_len) == mem.breakdown(batch, wl.seq_len)[1].total
