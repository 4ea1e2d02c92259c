"""KV-cache bytes per attention kind, against the formula and llama.cpp's published allocation."""

from __future__ import annotations

from gputui.fit.transformer.kv import kv_bytes_per_token, kv_cache_bytes


def test_llama3_8b_2048_f16_is_llama_cpp_256_mib(example) -> None:
    # llama.cpp log for Llama-3-8B, n_ctx 2048: "KV self size = 256.00 MiB, K (f16): 128.00 MiB"
    cfg = example("llama-3-8b").config
    assert kv_cache_bytes(cfg, 2048, 1, "fp16") == 256 * 2**20


def test_formula_layers_kv_heads_head_dim_bytes(example) -> None:
    cfg = example("llama-3-8b").config
    ctx, batch = 5000, 3
    assert kv_cache_bytes(cfg, ctx, batch, "bf16") == 2 * 32 * 8 * 128 * 2 * ctx * batch


def test_grouped_query_attention_caches_only_kv_heads(example) -> None:
    mha = example("llama-2-7b").config  # 32 kv heads
    gqa = example("llama-3-8b").config  # 8 kv heads
    assert kv_cache_bytes(mha, 4096) == 4 * kv_cache_bytes(gqa, 4096)
    assert kv_cache_bytes(mha, 4096) == 2 * 2**30


def test_sliding_window_caps_every_layer_of_mistral(example) -> None:
    cfg = example("mistral-7b-v0.1").config
    assert kv_cache_bytes(cfg, 32768) == kv_cache_bytes(cfg, 4096)
    assert kv_cache_bytes(cfg, 2000) < kv_cache_bytes(cfg, 4096)


def test_gemma2_caps_only_its_sliding_layers(example) -> None:
    cfg = example("gemma-2-9b").config
    per_layer_token = 2 * 8 * 256 * 2
    full, sliding = 21, 21
    assert kv_cache_bytes(cfg, 8192) == per_layer_token * (full * 8192 + sliding * 4096)


def test_gpt_oss_alternates_128_token_window(example) -> None:
    cfg = example("gpt-oss-20b").config
    per_layer_token = 2 * 8 * 64 * 2
    assert kv_cache_bytes(cfg, 100_000) == per_layer_token * (12 * 100_000 + 12 * 128)


def test_mla_caches_the_latent(example) -> None:
    cfg = example("deepseek-v3").config
    assert kv_bytes_per_token(cfg, "bf16") == (512 + 64) * 61 * 2
    expanded = kv_bytes_per_token(cfg, "bf16", "expanded")
    assert expanded == 128 * (128 + 64 + 128) * 61 * 2
    assert expanded / kv_bytes_per_token(cfg, "bf16") > 70


def test_quantized_cache_types(example) -> None:
    cfg = example("llama-3-8b").config
    f16 = kv_cache_bytes(cfg, 4096, 1, "fp16")
    assert kv_cache_bytes(cfg, 4096, 1, "fp8") == f16 // 2
    assert kv_cache_bytes(cfg, 4096, 1, "q8_0") == f16 * 34 // 64  # 34 bytes per 32 values
    assert kv_cache_bytes(cfg, 4096, 1, "q4_0") == f16 * 18 // 64


def test_paged_cache_rounds_to_whole_blocks(example) -> None:
    cfg = example("llama-3-8b").config
    assert kv_cache_bytes(cfg, 1001, paged_block=16) == kv_cache_bytes(cfg, 1008)


def test_tensor_parallel_splits_kv_heads_then_replicates(example) -> None:
    cfg = example("llama-3-8b").config  # 8 kv heads
    one = kv_cache_bytes(cfg, 4096)
    assert kv_cache_bytes(cfg, 4096, tp=8) == one // 8
    assert kv_cache_bytes(cfg, 4096, tp=16) == one // 8  # one kv head per GPU, replicated
    mla = example("deepseek-v2-lite").config
    assert kv_cache_bytes(mla, 4096, tp=4) == kv_cache_bytes(mla, 4096)


def test_encoders_have_no_cache(example) -> None:
    assert kv_cache_bytes(example("bert-base-uncased").config, 512) == 0
