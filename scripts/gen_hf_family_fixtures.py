"""Write real configs of the families hffamilies.py reads, with transformers' exact counts.

The configs are the published `config.json` values of each model card (typed in here:
no hub download), kept as published (keys equal to the class default left out, so
gputui's defaults are exercised). Each is built by `transformers` on the meta device
and its `num_parameters()` recorded; the family defaults table
(fit.importers.hffamily_defaults) is checked against the config classes first.

    python3 -m venv /tmp/torchvenv && /tmp/torchvenv/bin/pip install torch==2.13.0 transformers
    /tmp/torchvenv/bin/python scripts/gen_hf_family_fixtures.py

Writes tests/fixtures/hf/family_counts.json: each config with its class and count, and
(under _kv_probes) the bytes transformers' cache owns after a real forward of tiny ones.
"""

from __future__ import annotations

import inspect
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

MODERNBERT_BASE: dict[str, Any] = dict(
    model_type="modernbert", hidden_size=768, intermediate_size=1152, num_hidden_layers=22,
    num_attention_heads=12, vocab_size=50368, global_attn_every_n_layers=3,
    local_attention=128, max_position_embeddings=8192, norm_bias=False, mlp_bias=False,
    attention_bias=False, classifier_bias=False, decoder_bias=True, torch_dtype="float32",
)  # fmt: skip

FAMILIES: dict[str, dict[str, Any]] = {
    "falcon-7b": dict(
        model_type="falcon", architectures=["FalconForCausalLM"], hidden_size=4544,
        num_hidden_layers=32, num_attention_heads=71, multi_query=True, parallel_attn=True,
        bias=False, alibi=False, new_decoder_architecture=False, vocab_size=65024,
        torch_dtype="bfloat16",
    ),
    "falcon-40b": dict(
        model_type="falcon", architectures=["FalconForCausalLM"], hidden_size=8192,
        num_hidden_layers=60, num_attention_heads=128, num_kv_heads=8,
        new_decoder_architecture=True, parallel_attn=True, bias=False, alibi=False,
        vocab_size=65024, torch_dtype="bfloat16",
    ),
    "falcon-11b": dict(
        model_type="falcon", architectures=["FalconForCausalLM"], hidden_size=4096,
        num_hidden_layers=60, num_attention_heads=32, num_kv_heads=8,
        new_decoder_architecture=True, num_ln_in_parallel_attn=1, parallel_attn=True,
        max_position_embeddings=8192, vocab_size=65024, torch_dtype="bfloat16",
    ),
    "falcon-rw-1b": dict(
        model_type="falcon", architectures=["FalconForCausalLM"], hidden_size=2048,
        num_hidden_layers=24, num_attention_heads=32, alibi=True, bias=True,
        multi_query=False, new_decoder_architecture=False, parallel_attn=False,
        vocab_size=50304, torch_dtype="bfloat16",
    ),
    "bloom-560m": dict(
        model_type="bloom", architectures=["BloomForCausalLM"], n_embed=1024, n_head=16,
        n_layer=24, vocab_size=250880, torch_dtype="float16",
    ),
    "bloom-7b1": dict(
        model_type="bloom", architectures=["BloomForCausalLM"], hidden_size=4096, n_head=32,
        n_layer=30, vocab_size=250880, torch_dtype="float16",
    ),
    "t5-small": dict(
        model_type="t5", architectures=["T5ForConditionalGeneration"], d_model=512, d_ff=2048,
        d_kv=64, num_heads=8, num_layers=6, vocab_size=32128, torch_dtype="float32",
    ),
    "t5-11b": dict(
        model_type="t5", architectures=["T5ForConditionalGeneration"], d_model=1024,
        d_ff=65536, d_kv=128, num_heads=128, num_layers=24, vocab_size=32128,
        torch_dtype="float32",
    ),
    "flan-t5-base": dict(
        model_type="t5", architectures=["T5ForConditionalGeneration"], d_model=768, d_ff=2048,
        d_kv=64, num_heads=12, num_layers=12, num_decoder_layers=12,
        feed_forward_proj="gated-gelu", tie_word_embeddings=False, vocab_size=32128,
        torch_dtype="float32",
    ),
    "starcoder2-3b": dict(
        model_type="starcoder2", architectures=["Starcoder2ForCausalLM"], hidden_size=3072,
        intermediate_size=12288, num_hidden_layers=30, num_attention_heads=24,
        num_key_value_heads=2, max_position_embeddings=16384, sliding_window=4096,
        use_bias=True, vocab_size=49152, torch_dtype="bfloat16",
    ),
    "starcoder2-15b": dict(
        model_type="starcoder2", architectures=["Starcoder2ForCausalLM"], hidden_size=6144,
        intermediate_size=24576, num_hidden_layers=40, num_attention_heads=48,
        num_key_value_heads=4, max_position_embeddings=16384, sliding_window=4096,
        use_bias=True, vocab_size=49152, torch_dtype="bfloat16",
    ),
    "phi-2": dict(
        model_type="phi", architectures=["PhiForCausalLM"], hidden_size=2560,
        intermediate_size=10240, num_hidden_layers=32, num_attention_heads=32,
        num_key_value_heads=32, partial_rotary_factor=0.4, max_position_embeddings=2048,
        vocab_size=51200, torch_dtype="float16",
    ),
    "phi-1_5": dict(
        model_type="phi", architectures=["PhiForCausalLM"], hidden_size=2048,
        intermediate_size=8192, num_hidden_layers=24, num_attention_heads=32,
        partial_rotary_factor=0.5, vocab_size=51200, torch_dtype="float16",
    ),
    "jamba-v0.1": dict(
        model_type="jamba", architectures=["JambaForCausalLM"], hidden_size=4096,
        intermediate_size=14336, num_hidden_layers=32, num_attention_heads=32,
        num_key_value_heads=8, num_experts=16, num_experts_per_tok=2, vocab_size=65536,
        torch_dtype="bfloat16",
    ),
    "jamba-small-periods": dict(
        model_type="jamba", architectures=["JambaForCausalLM"], hidden_size=1024,
        intermediate_size=4096, num_hidden_layers=12, num_attention_heads=16,
        num_key_value_heads=4, num_experts=4, num_experts_per_tok=1, attn_layer_period=4,
        attn_layer_offset=1, expert_layer_period=3, expert_layer_offset=2, mamba_d_state=8,
        mamba_dt_rank=48, mamba_proj_bias=True, tie_word_embeddings=True, vocab_size=32000,
        torch_dtype="bfloat16",
    ),
    "command-r-v01": dict(
        model_type="cohere", architectures=["CohereForCausalLM"], hidden_size=8192,
        intermediate_size=22528, num_hidden_layers=40, num_attention_heads=64,
        num_key_value_heads=64, logit_scale=0.0625, max_position_embeddings=8192,
        vocab_size=256000, torch_dtype="float16",
    ),
    "command-r-plus": dict(
        model_type="cohere", architectures=["CohereForCausalLM"], hidden_size=12288,
        intermediate_size=33792, num_hidden_layers=64, num_attention_heads=96,
        num_key_value_heads=8, logit_scale=0.8333333333333334, use_qk_norm=True,
        max_position_embeddings=8192, vocab_size=256000, torch_dtype="float16",
    ),
    "aya-23-8b": dict(
        model_type="cohere", architectures=["CohereForCausalLM"], hidden_size=4096,
        intermediate_size=14336, num_hidden_layers=32, num_attention_heads=32,
        num_key_value_heads=8, logit_scale=0.125, max_position_embeddings=8192,
        vocab_size=256000, torch_dtype="float16",
    ),
    "gpt-j-6b-hub": dict(
        model_type="gptj", architectures=["GPTJForCausalLM"], n_embd=4096, n_layer=28,
        n_head=16, rotary_dim=64, n_positions=2048, vocab_size=50400, torch_dtype="float16",
    ),
    "modernbert-base": dict(MODERNBERT_BASE, architectures=["ModernBertForMaskedLM"]),
    "modernbert-base-bare": dict(MODERNBERT_BASE, architectures=["ModernBertModel"]),
    "modernbert-base-seqcls-3": dict(
        MODERNBERT_BASE, architectures=["ModernBertForSequenceClassification"],
        id2label={"0": "negative", "1": "neutral", "2": "positive"},
    ),
    "modernbert-large": dict(
        model_type="modernbert", architectures=["ModernBertForMaskedLM"], hidden_size=1024,
        intermediate_size=2624, num_hidden_layers=28, num_attention_heads=16,
        vocab_size=50368, global_attn_every_n_layers=3, local_attention=128,
        max_position_embeddings=8192, norm_bias=False, mlp_bias=False, attention_bias=False,
        classifier_bias=False, decoder_bias=True, torch_dtype="float32",
    ),
    "granite-3.1-8b-base": dict(
        model_type="granite", architectures=["GraniteForCausalLM"], hidden_size=4096,
        intermediate_size=12800, num_hidden_layers=40, num_attention_heads=32,
        num_key_value_heads=8, vocab_size=49155, max_position_embeddings=131072,
        attention_bias=False, attention_dropout=0.1, mlp_bias=False, embedding_multiplier=12.0,
        logits_scaling=16.0, residual_multiplier=0.22, attention_multiplier=0.0078125,
        rope_theta=10000000.0, rms_norm_eps=1e-05, tie_word_embeddings=True,
        torch_dtype="bfloat16",
    ),
    "smollm3-3b": dict(
        model_type="smollm3", architectures=["SmolLM3ForCausalLM"], hidden_size=2048,
        intermediate_size=11008, num_hidden_layers=36, num_attention_heads=16,
        num_key_value_heads=4, vocab_size=128256, max_position_embeddings=65536,
        max_window_layers=28, no_rope_layer_interval=4,
        no_rope_layers=[0 if (i + 1) % 4 == 0 else 1 for i in range(36)],
        rope_theta=5000000.0, rms_norm_eps=1e-06, sliding_window=None,
        use_sliding_window=False, torch_dtype="bfloat16",
    ),
}  # fmt: skip


# tiny configs whose cache is measured after a real bf16 forward on the CPU (kv_probe)
KV_PROBES: dict[str, dict[str, Any]] = {
    "falcon-grouped": dict(
        model_type="falcon", architectures=["FalconForCausalLM"], hidden_size=64,
        num_hidden_layers=2, num_attention_heads=8, num_kv_heads=2,
        new_decoder_architecture=True, vocab_size=128,
    ),
    "falcon-multi-query": dict(
        model_type="falcon", architectures=["FalconForCausalLM"], hidden_size=64,
        num_hidden_layers=2, num_attention_heads=8, vocab_size=128,
    ),
    "bloom-tiny": dict(
        model_type="bloom", architectures=["BloomForCausalLM"], hidden_size=64, n_head=4,
        n_layer=2, vocab_size=128,
    ),
    "jamba-tiny": dict(
        model_type="jamba", architectures=["JambaForCausalLM"], hidden_size=64,
        intermediate_size=128, num_hidden_layers=4, num_attention_heads=4,
        num_key_value_heads=2, attn_layer_period=2, attn_layer_offset=1, num_experts=2,
        vocab_size=128,
    ),
    "t5-tiny": dict(
        model_type="t5", architectures=["T5ForConditionalGeneration"], d_model=64, d_ff=128,
        d_kv=16, num_heads=4, num_layers=2, num_decoder_layers=3, vocab_size=128,
    ),
}  # fmt: skip
PROBE_BATCH, PROBE_PROMPT, PROBE_DECODER = 2, 10, 3


def _tensors(obj: Any, seen: set[int], depth: int = 0) -> list[Any]:
    """Every tensor a cache object holds (its layers' keys/values, conv and SSM states)."""
    import torch

    if depth > 5:
        return []
    if isinstance(obj, torch.Tensor):
        if obj.numel() and id(obj) not in seen:
            seen.add(id(obj))
            return [obj]
        return []
    items = (
        obj.values()
        if isinstance(obj, dict)
        else obj
        if isinstance(obj, (list, tuple))
        else vars(obj).values()
        if hasattr(obj, "__dict__")
        else ()
    )
    return [t for x in items for t in _tensors(x, seen, depth + 1)]


def kv_probe(cfg_dict: dict[str, Any]) -> int:
    """Bytes of storage transformers' cache owns after a bf16 forward of PROBE_PROMPT tokens
    (T5: the encoder on the prompt, the decoder on PROBE_DECODER tokens)."""
    import torch
    import transformers
    from transformers import AutoConfig

    kwargs = {k: v for k, v in cfg_dict.items() if k != "model_type"}
    cfg = AutoConfig.for_model(cfg_dict["model_type"], **kwargs)
    torch.manual_seed(0)
    model = getattr(transformers, cfg_dict["architectures"][0])(cfg).to(torch.bfloat16).eval()
    ids = torch.randint(0, 100, (PROBE_BATCH, PROBE_PROMPT))
    extra = {}
    if cfg_dict["model_type"] == "t5":
        extra["decoder_input_ids"] = torch.zeros(PROBE_BATCH, PROBE_DECODER, dtype=torch.long)
    with torch.no_grad():
        out = model(input_ids=ids, use_cache=True, **extra)
    cache = out["cache"] if "cache" in out else out["past_key_values"]
    return sum(int(t.untyped_storage().nbytes()) for t in _tensors(cache, set()))


def check_defaults() -> None:
    """fit.importers.hffamily_defaults equals each config class's own defaults."""
    from transformers import CONFIG_MAPPING

    sys.path.insert(0, str(ROOT / "src"))
    from gputui.fit.importers.hffamily_defaults import FAMILY_DEFAULTS, FAMILY_READ_KEYS

    for mt, ours in FAMILY_DEFAULTS.items():
        params = inspect.signature(CONFIG_MAPPING[mt].__init__).parameters
        theirs = {
            key: p.default
            for key, p in params.items()
            if key in FAMILY_READ_KEYS
            and p.default is not inspect.Parameter.empty
            and p.default is not None
        }
        if dict(ours) != theirs:
            raise SystemExit(f"hffamily_defaults[{mt!r}] differs from transformers: {theirs}")


def count(cfg_dict: dict[str, Any]) -> tuple[int, str]:
    import torch
    import transformers
    from transformers import AutoConfig

    kwargs = {k: v for k, v in cfg_dict.items() if k not in ("model_type", "torch_dtype")}
    cfg = AutoConfig.for_model(cfg_dict["model_type"], **kwargs)
    with torch.device("meta"):
        model = getattr(transformers, cfg_dict["architectures"][0])(cfg)
    return int(model.num_parameters()), type(model).__name__


def main() -> int:
    import transformers

    check_defaults()
    out: dict[str, Any] = {
        "_generated_by": f"scripts/gen_hf_family_fixtures.py, transformers {transformers.__version__}"
    }
    for name, cfg in FAMILIES.items():
        n, cls = count(cfg)
        out[name] = {"class": cls, "num_parameters": n, "config": cfg}
        print(f"{name:<22} {cls:<30} {n:>16,}", flush=True)
    probes: dict[str, Any] = {}
    for name, cfg in KV_PROBES.items():
        n = kv_probe(cfg)
        probes[name] = {"config": cfg, "cache_bytes": n}
        print(f"{name:<22} cache after the forward {n:>10,} bytes", flush=True)
    out["_kv_probes"] = {
        "batch": PROBE_BATCH,
        "prompt": PROBE_PROMPT,
        "decoder_tokens": PROBE_DECODER,
        "dtype": "bf16",
        "probes": probes,
    }
    path = ROOT / "tests" / "fixtures" / "hf" / "family_counts.json"
    path.write_text(json.dumps(out, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
