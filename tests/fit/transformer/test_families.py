"""Falcon, BLOOM, T5, StarCoder2, Phi, Cohere, Jamba and GPT-J from their config.json,
against counts and cache sizes transformers itself produced
(tests/fixtures/hf/family_counts.json, scripts/gen_hf_family_fixtures.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gputui.fit.importers.hfkeys import from_hf_dict
from gputui.fit.transformer.config import ConfigError
from gputui.fit.transformer.kv import kv_bytes_per_token, kv_cache_bytes, kv_layers
from gputui.fit.transformer.layout import layout

FIXTURE = Path(__file__).parents[2] / "fixtures" / "hf" / "family_counts.json"
DATA: dict[str, Any] = json.loads(FIXTURE.read_text())
FAMILIES = {k: v for k, v in DATA.items() if not k.startswith("_")}
PROBES = DATA["_kv_probes"]


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_parameter_count_equals_transformers(name: str) -> None:
    entry = FAMILIES[name]
    cfg = from_hf_dict(entry["config"])
    assert layout(cfg).params == entry["num_parameters"], entry["class"]
    assert cfg.params_range is None  # a known family: one exact figure


def test_every_family_of_the_issue_is_covered() -> None:
    types = {e["config"]["model_type"] for e in FAMILIES.values()}
    assert types >= {"falcon", "bloom", "t5", "starcoder2", "phi", "cohere", "jamba", "gptj"}


@pytest.mark.parametrize("name", sorted(PROBES["probes"]))
def test_cache_bytes_equal_what_transformers_keeps(name: str) -> None:
    """Multi-query and grouped Falcon (broadcast to every head in transformers' cache), BLOOM,
    Jamba (K/V only in its attention layers, plus the conv and fp32 SSM state of each Mamba
    layer) and T5 (decoder self-attention + cross-attention over the encoder's tokens)."""
    probe = PROBES["probes"][name]
    cfg = from_hf_dict(probe["config"])
    context = PROBES["prompt"] + (PROBES["decoder_tokens"] if cfg.encdec is not None else 0)
    got = kv_cache_bytes(cfg, context, PROBES["batch"], PROBES["dtype"])
    assert got == probe["cache_bytes"]


def test_grouped_falcon_caches_its_groups_in_transformers_as_in_a_paged_engine() -> None:
    """transformers 5.25 caches a grouped Falcon's K/V groups (5.24 broadcast them to every
    query head first, 4x the cache of this 8-head, 2-group probe)."""
    cfg = from_hf_dict(PROBES["probes"]["falcon-grouped"]["config"])
    hf = kv_cache_bytes(cfg, 96, 1, "bf16")
    paged = kv_cache_bytes(cfg, 96, 1, "bf16", paged_block=16)  # 96 tokens: whole blocks
    assert hf == paged == 96 * 2 * cfg.num_kv_heads * cfg.head_dim * 2 * cfg.num_layers


def test_jamba_caches_kv_only_in_its_attention_layers() -> None:
    cfg = from_hf_dict(FAMILIES["jamba-v0.1"]["config"])
    assert kv_layers(cfg) == 4  # 1 in 8 of 32 layers
    assert kv_bytes_per_token(cfg, "bf16") == 4 * 2 * 8 * 128 * 2
    # the Mamba state does not grow with the context
    grow = kv_cache_bytes(cfg, 2000, 1) - kv_cache_bytes(cfg, 1000, 1)
    assert grow == 1000 * kv_bytes_per_token(cfg, "fp16")
    assert kv_cache_bytes(cfg, 1000, 1) > 1000 * kv_bytes_per_token(cfg, "fp16")


def test_t5_encoder_layers_cache_nothing() -> None:
    cfg = from_hf_dict(FAMILIES["t5-small"]["config"])
    assert cfg.num_layers == 12 and kv_layers(cfg) == 6
    assert kv_cache_bytes(cfg, 10, 1, layers=range(0, 6)) == 0


def test_t5_untied_config_is_tied_as_transformers_5_does_with_a_note() -> None:
    cfg = from_hf_dict(FAMILIES["flan-t5-base"]["config"])
    assert cfg.tie_word_embeddings
    assert any("24,674,304 parameters more" in w for w in cfg.warnings)


def test_jamba_mamba_activations_on_cpu_follow_the_slow_path() -> None:
    from gputui.fit.transformer.activations import layer_acts
    from gputui.fit.transformer.workload import Workload

    cfg = from_hf_dict(FAMILIES["jamba-small-periods"]["config"])
    lay = layout(cfg)
    mamba = lay.blocks[lay.layer_blocks[0]]
    attention = lay.blocks[lay.layer_blocks[1]]
    assert any(lin.role == "mamba_in" for lin in mamba.linears)
    assert any(lin.role == "q" for lin in attention.linears)
    cuda = layer_acts(cfg, Workload(mode="train", backend="cuda"), mamba.linears, False)
    cpu = layer_acts(cfg, Workload(mode="train", backend="cpu"), mamba.linears, False)
    assert cuda.saved.per_seq_sq == 0  # nothing quadratic in a Mamba mixer
    m = cfg.mamba
    assert m is not None
    assert cpu.saved.per_token - cuda.saved.per_token == 12 * m.inner * m.d_state


def _unknown(**extra: Any) -> dict[str, Any]:
    return {
        "model_type": "zorblax",
        "hidden_size": 1024,
        "num_hidden_layers": 4,
        "num_attention_heads": 8,
        "intermediate_size": 4096,
        "vocab_size": 1000,
        **extra,
    }


def test_unknown_type_gives_a_range_and_says_what_is_unknown() -> None:
    cfg = from_hf_dict(_unknown())
    assert cfg.params_range is not None
    lo, hi = cfg.params_range
    h, i, v, n = 1024, 4096, 1000, 4
    bare = v * h + n * (4 * h * h + 2 * h * i + 2 * h) + h  # tied, ungated, RMS, no biases
    assert lo == bare
    assert layout(cfg).params == hi > lo  # the estimate is built on the upper end
    (note,) = [w for w in cfg.warnings if "unknown model_type" in w]
    assert f"between {lo:,} and {hi:,}" in note
    assert "a tied or untied head" in note and "K/V heads" in note


def test_unknown_masked_lm_is_an_encoder_whose_range_claims_no_bound() -> None:
    """An unknown type whose class is a masked LM (ModernBERT before it was a family): no KV
    cache, and the note does not call its upper end a bound its head can exceed."""
    entry = FAMILIES["modernbert-base"]
    raw = {**entry["config"], "model_type": "modernbert_like"}
    cfg = from_hf_dict(raw)
    assert cfg.encoder and cfg.params_range is not None
    assert kv_layers(cfg) == 0
    assert kv_cache_bytes(cfg, 1000, 1) == 0
    (note,) = [w for w in cfg.warnings if "unknown model_type" in w]
    assert "upper bound" not in note and "would add to it" in note
    # the real model holds its masked-LM head beyond the Llama-style upper end
    assert entry["num_parameters"] > cfg.params_range[1]


def test_unknown_type_with_a_stated_tie_narrows_the_range() -> None:
    free = from_hf_dict(_unknown()).params_range
    tied = from_hf_dict(_unknown(tie_word_embeddings=True, num_key_value_heads=8)).params_range
    assert free is not None and tied is not None
    assert tied[0] == free[0] and tied[1] < free[1]
    note = [w for w in from_hf_dict(_unknown(tie_word_embeddings=True)).warnings if "unknown" in w]
    assert "tied or untied" not in note[0]


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (
            {"model_type": "falcon", "new_decoder_architecture": True, "num_kv_heads": 3},
            "num_kv_heads",
        ),
        ({"model_type": "falcon", "num_attention_heads": 7}, "num_attention_heads"),
        ({"model_type": "t5", "feed_forward_proj": "fancy-gelu"}, "feed_forward_proj"),
        ({"model_type": "t5", "d_kv": 0}, "d_kv"),
        ({"model_type": "jamba", "attn_layer_offset": 8}, "attn_layer_offset"),
        ({"model_type": "jamba", "mamba_dt_rank": "big"}, "mamba_dt_rank"),
        ({"model_type": "jamba", "num_experts_per_tok": 17}, "num_experts_per_tok"),
        ({"model_type": "cohere", "use_qk_norm": "yes"}, "use_qk_norm"),
        ({"model_type": "bloom", "n_embed": 10, "n_head": 3}, "n_head"),
        ({"model_type": "phi", "num_key_value_heads": 5}, "num_key_value_heads"),
    ],
)
def test_bad_family_values_name_the_key(change: dict[str, Any], field: str) -> None:
    with pytest.raises(ConfigError) as err:
        from_hf_dict(change)
    assert err.value.field == field


def test_defaults_fill_what_a_published_config_leaves_out() -> None:
    """falcon-7b's config.json has no ffn_hidden_size, max_position_embeddings or
    tie_word_embeddings; Jamba's none of the mamba_* keys: the class defaults apply."""
    falcon = from_hf_dict(FAMILIES["falcon-7b"]["config"])
    assert falcon.intermediate_size == 4 * 4544 and falcon.num_kv_heads == 1
    assert falcon.tie_word_embeddings and falcon.max_position_embeddings == 2048
    jamba = from_hf_dict(FAMILIES["jamba-v0.1"]["config"])
    assert jamba.mamba is not None
    assert (jamba.mamba.d_state, jamba.mamba.d_conv, jamba.mamba.dt_rank) == (16, 4, 256)
    assert jamba.moe is not None and jamba.moe.dense_layers == tuple(range(0, 32, 2))


@pytest.mark.parametrize(
    "name", ["falcon-40b", "bloom-560m", "flan-t5-base", "jamba-v0.1", "phi-2"]
)
def test_cli_estimates_every_family(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from gputui.cli import main

    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(FAMILIES[name]["config"]))
    for mode in ("generate", "train"):
        code = main(["fit", str(path), "--mode", mode, "--gpu", "H100 SXM5 80GB", "--json"])
        out = capsys.readouterr().out
        assert code in (0, 1), out
        data = json.loads(out)
        assert json.dumps(data).count(f"{FAMILIES[name]['num_parameters']}") >= 1


def _peak(raw: dict[str, Any], mode: str, attention: str = "sdpa", seq: int = 512) -> int:
    from gputui.fit.transformer.estimate import memory
    from gputui.fit.transformer.model import from_config
    from gputui.fit.transformer.workload import Workload

    model = from_config(from_hf_dict(raw), "m", "test")
    wl = Workload(
        mode=mode,  # type: ignore[arg-type]
        batch_size=2,
        seq_len=seq,
        precision="fp32",
        weights="fp32",
        backend="cpu",
        attention=attention,  # type: ignore[arg-type]
    )
    return int(memory(model, wl).breakdown(2, seq)[1].total)


SMALL = dict(hidden_size=512, num_hidden_layers=4, num_attention_heads=8, vocab_size=8000)


@pytest.mark.parametrize(
    "raw",
    [
        {"model_type": "bloom", "n_layer": 4, "n_head": 8, "hidden_size": 512, "vocab_size": 8000},
        {"model_type": "falcon", **SMALL},  # multi-query: one K/V head broadcast to all
        {"model_type": "falcon", "alibi": True, **SMALL},
    ],
)
def test_attention_that_materializes_probabilities_even_under_sdpa(raw: dict[str, Any]) -> None:
    """Measured on CPU (docs/fit.md): BLOOM, ALiBi and multi-query Falcon build the
    (seq x seq) scores whatever attn_implementation says; a fused-kernel figure under-counts."""
    assert _peak(raw, "inference", "sdpa") == _peak(raw, "inference", "eager")
    assert _peak(raw, "inference", "sdpa", 1024) - _peak(raw, "inference", "sdpa", 512) > (
        2 * 8 * (1024**2 - 512**2) * 4
    )


def test_grouped_falcon_uses_the_fused_kernel() -> None:
    raw = {"model_type": "falcon", "new_decoder_architecture": True, "num_kv_heads": 2, **SMALL}
    assert _peak(raw, "inference", "sdpa") < _peak(raw, "inference", "eager")


def test_cohere_inference_holds_the_scaled_logits_beside_the_logits() -> None:
    raw = {"model_type": "cohere", "intermediate_size": 1536, "num_key_value_heads": 2, **SMALL}
    unscaled = {**raw, "logit_scale": 1.0}
    assert _peak(raw, "inference") - _peak(unscaled, "inference") == 2 * 512 * 8000 * 4


def test_t5_training_keeps_the_dropout_of_its_mlp_intermediate() -> None:
    """Measured: without it T5 training came out -12.7 % (CPU fp32, b2 s256)."""
    from gputui.fit.transformer.activations import layer_acts
    from gputui.fit.transformer.workload import Workload

    raw = {"model_type": "t5", "d_model": 512, "num_layers": 4, "vocab_size": 8000}
    wl = Workload(mode="train", backend="cpu", precision="fp32", weights="fp32")
    lins = layout(from_hf_dict(raw)).blocks[0].linears
    with_drop = layer_acts(from_hf_dict(raw), wl, lins, False).saved.per_token
    without = layer_acts(
        from_hf_dict({**raw, "dropout_rate": 0.0}), wl, lins, False
    ).saved.per_token
    assert with_drop - without >= (4 + 4) * 2048


def test_a_gguf_of_an_unmapped_architecture_named_like_a_family_keeps_its_kv_heads(
    tmp_path: Path,
) -> None:
    """A GGUF `falcon` is read into Llama-named keys (num_key_value_heads), not Falcon's own
    (num_kv_heads, multi_query): it must not go through the Falcon reader's defaults."""
    import importlib.util

    from gputui.fit.importers.gguf import load_gguf

    root = Path(__file__).resolve().parents[3]
    spec = importlib.util.spec_from_file_location(
        "mk", root / "tests/fixtures/gguf/make_tiny_gguf.py"
    )
    assert spec and spec.loader
    mk: Any = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mk)
    meta, tensors = mk.tiny_llama(kv=2)
    meta = {k.replace("llama.", "falcon."): v for k, v in meta.items()}
    meta["general.architecture"] = "falcon"
    path = tmp_path / "f.gguf"
    mk.write_gguf(path, meta, tensors)
    model = load_gguf(path)
    assert model.config.num_kv_heads == 2
    assert any("not known" in w for w in model.warnings)


def test_granite_is_read_as_llama_with_its_logits_scaled_into_a_second_tensor() -> None:
    """granite-3.1-8b-base was an unknown type, counted at the range's upper end (biases on
    every linear, LayerNorms): 8,172,777,472 against transformers' 8,170,848,256."""
    cfg = from_hf_dict(FAMILIES["granite-3.1-8b-base"]["config"])
    assert layout(cfg).params == 8_170_848_256
    assert cfg.logit_scale and not cfg.qkv_bias and cfg.norm == "rms"


def test_a_masked_lm_encoder_holds_its_logits_in_inference() -> None:
    """ModernBertForMaskedLM at batch 4, seq 512 measured 976.39 MiB on CPU in fp32
    (benchmarks/measured/transformers_own_models.csv); without its logits (4 x 512 x 50,368
    fp32, 393 MiB) the estimate read 618.91 MiB, -36.6 %."""
    from gputui.fit.transformer.estimate import memory
    from gputui.fit.transformer.model import from_config
    from gputui.fit.transformer.workload import Workload

    model = from_config(from_hf_dict(FAMILIES["modernbert-base"]["config"]), "mb", "test")
    wl = Workload(mode="inference", batch_size=4, seq_len=512, precision="fp32",
                  weights="fp32", backend="cpu")  # fmt: skip
    phase, parts = memory(model, wl).breakdown(4, 512)
    assert phase == "logits"
    assert abs(parts.total / 2**20 - 976.39) / 976.39 < 0.01


def test_t5_generate_under_sdpa_matches_transformers_5_25() -> None:
    """flan-t5-base, batch 4, prompt 512 + 16 new, fp32 on CPU: transformers 5.25 runs T5
    under sdpa (its position bias as the float mask) and measured 1,012.67 MiB
    (benchmarks/hf_generate_memory.py, benchmarks/measured/transformers_own_models.csv).
    Modelled as eager with the decoder's cache already full while the encoder ran, the
    estimate read 1,233.31 MiB (+21.8 %)."""
    from gputui.fit.transformer.estimate import memory
    from gputui.fit.transformer.model import from_config
    from gputui.fit.transformer.workload import Workload

    model = from_config(from_hf_dict(FAMILIES["flan-t5-base"]["config"]), "t5", "test")
    wl = Workload(mode="generate", batch_size=4, seq_len=512, new_tokens=16, precision="fp32",
                  weights="fp32", kv_dtype="fp32", backend="cpu")  # fmt: skip
    mem = memory(model, wl)
    phase, parts = mem.breakdown(4, 512)
    measured = 1_012.67 * 2**20
    assert abs(parts.total - measured) / measured < 0.01
    sm = mem.stages[0]
    encoder = next(ph for ph in sm.phases if ph.kv == "prompt")
    assert sm.parts(encoder, 4, 512).kv_cache == 0  # the encoder runs before any cache


@pytest.mark.parametrize(
    ("attention", "measured", "was"), [("sdpa", 689.48, 1_072.68), ("eager", 1_252.16, 1_872.68)]
)
def test_t5_generate_at_a_long_prompt_is_its_encoder_with_one_bias_for_the_batch(
    attention: str, measured: float, was: float
) -> None:
    """flan-t5-base with 2 + 2 layers, batch 2, prompt 2,048 + 2, fp32 CPU, transformers
    5.25: the encoder's attention is the peak. The estimate (`was`) ran the decoder's layers
    over the prompt too and counted the position bias once per sequence."""
    from gputui.fit.transformer.estimate import memory
    from gputui.fit.transformer.model import from_config
    from gputui.fit.transformer.workload import Workload

    raw = {**FAMILIES["flan-t5-base"]["config"], "num_layers": 2, "num_decoder_layers": 2}
    model = from_config(from_hf_dict(raw), "t5", "test")
    wl = Workload(mode="generate", batch_size=2, seq_len=2048, new_tokens=2, precision="fp32",
                  weights="fp32", kv_dtype="fp32", backend="cpu",
                  attention=attention)  # type: ignore[arg-type]  # fmt: skip
    phase, parts = memory(model, wl).breakdown(2, 2048)
    assert phase == "prefill, attention"
    assert -0.01 < (parts.total / 2**20 - measured) / measured < 0.05
