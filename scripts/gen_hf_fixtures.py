"""Write the shipped Hugging Face configs and their exact parameter counts, with `transformers`.

The configs are the published `config.json` values of each model card (typed in
here: no hub download). Each is built by `transformers` on the meta device (no
weights allocated, nothing downloaded) and its `num_parameters()` recorded, so
gputui's own counting is tested against transformers without depending on it.

    python3.11 -m venv /work/venv-hf
    /work/venv-hf/bin/pip install torch==2.13.0 transformers accelerate
    /work/venv-hf/bin/python scripts/gen_hf_fixtures.py
    /work/venv-hf/bin/python scripts/gen_hf_fixtures.py --extra   # the two JSONs below

Writes examples/llm/<name>.json and tests/fixtures/hf/param_counts.json; then
tests/fixtures/hf/config_defaults.json (each supported config class's `__init__`
defaults for the keys gputui reads, after checking gputui's own table
fit.llm.hfdefaults against them) and tests/fixtures/hf/extra_counts.json (configs
that rely on those defaults, and encoders with each task head their
`architectures` class names, each with transformers' count).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

LLAMA2_7B = dict(
    model_type="llama", hidden_size=4096, num_hidden_layers=32, num_attention_heads=32,
    num_key_value_heads=32, intermediate_size=11008, vocab_size=32000,
    max_position_embeddings=4096, rms_norm_eps=1e-5, tie_word_embeddings=False,
    torch_dtype="float16",
)  # fmt: skip

CONFIGS: dict[str, dict[str, Any]] = {
    "gpt2": dict(
        model_type="gpt2", n_embd=768, n_layer=12, n_head=12, n_positions=1024, n_ctx=1024,
        vocab_size=50257, torch_dtype="float32",
    ),
    "pythia-410m": dict(
        model_type="gpt_neox", hidden_size=1024, num_hidden_layers=24, num_attention_heads=16,
        intermediate_size=4096, vocab_size=50304, max_position_embeddings=2048, rotary_pct=0.25,
        use_parallel_residual=True, tie_word_embeddings=False, torch_dtype="float16",
    ),
    "gpt-j-6b": dict(
        model_type="gptj", n_embd=4096, n_layer=28, n_head=16, rotary_dim=64, vocab_size=50400,
        n_positions=2048, tie_word_embeddings=False, torch_dtype="float16",
    ),
    "opt-350m": dict(
        model_type="opt", hidden_size=1024, ffn_dim=4096, num_hidden_layers=24,
        num_attention_heads=16, vocab_size=50272, max_position_embeddings=2048,
        word_embed_proj_dim=512, do_layer_norm_before=False, torch_dtype="float16",
    ),
    "opt-1.3b": dict(
        model_type="opt", hidden_size=2048, ffn_dim=8192, num_hidden_layers=24,
        num_attention_heads=32, vocab_size=50272, max_position_embeddings=2048,
        word_embed_proj_dim=2048, do_layer_norm_before=True, torch_dtype="float16",
    ),
    "llama-7b": {**LLAMA2_7B, "max_position_embeddings": 2048, "rms_norm_eps": 1e-6},
    "llama-2-7b": LLAMA2_7B,
    "llama-3-8b": dict(
        model_type="llama", hidden_size=4096, num_hidden_layers=32, num_attention_heads=32,
        num_key_value_heads=8, intermediate_size=14336, vocab_size=128256,
        max_position_embeddings=8192, rope_theta=500000.0, rms_norm_eps=1e-5,
        tie_word_embeddings=False, torch_dtype="bfloat16",
    ),
    "llama-3-70b": dict(
        model_type="llama", hidden_size=8192, num_hidden_layers=80, num_attention_heads=64,
        num_key_value_heads=8, intermediate_size=28672, vocab_size=128256,
        max_position_embeddings=8192, rope_theta=500000.0, rms_norm_eps=1e-5,
        tie_word_embeddings=False, torch_dtype="bfloat16",
    ),
    "llama-3.2-1b": dict(
        model_type="llama", hidden_size=2048, num_hidden_layers=16, num_attention_heads=32,
        num_key_value_heads=8, head_dim=64, intermediate_size=8192, vocab_size=128256,
        max_position_embeddings=131072, rope_theta=500000.0, tie_word_embeddings=True,
        torch_dtype="bfloat16",
    ),
    "mistral-7b-v0.1": dict(
        model_type="mistral", hidden_size=4096, num_hidden_layers=32, num_attention_heads=32,
        num_key_value_heads=8, intermediate_size=14336, vocab_size=32000,
        max_position_embeddings=32768, sliding_window=4096, tie_word_embeddings=False,
        torch_dtype="bfloat16",
    ),
    "mixtral-8x7b": dict(
        model_type="mixtral", hidden_size=4096, num_hidden_layers=32, num_attention_heads=32,
        num_key_value_heads=8, intermediate_size=14336, vocab_size=32000,
        max_position_embeddings=32768, num_local_experts=8, num_experts_per_tok=2,
        sliding_window=None, tie_word_embeddings=False, torch_dtype="bfloat16",
    ),
    "qwen2.5-0.5b": dict(
        model_type="qwen2", hidden_size=896, num_hidden_layers=24, num_attention_heads=14,
        num_key_value_heads=2, intermediate_size=4864, vocab_size=151936,
        max_position_embeddings=32768, use_sliding_window=False, sliding_window=32768,
        max_window_layers=24, tie_word_embeddings=True, torch_dtype="bfloat16",
    ),
    "qwen2.5-7b": dict(
        model_type="qwen2", hidden_size=3584, num_hidden_layers=28, num_attention_heads=28,
        num_key_value_heads=4, intermediate_size=18944, vocab_size=152064,
        max_position_embeddings=131072, use_sliding_window=False, sliding_window=131072,
        max_window_layers=28, tie_word_embeddings=False, torch_dtype="bfloat16",
    ),
    "qwen3-8b": dict(
        model_type="qwen3", hidden_size=4096, num_hidden_layers=36, num_attention_heads=32,
        num_key_value_heads=8, head_dim=128, intermediate_size=12288, vocab_size=151936,
        max_position_embeddings=40960, tie_word_embeddings=False, torch_dtype="bfloat16",
    ),
    "qwen1.5-moe-a2.7b": dict(
        model_type="qwen2_moe", hidden_size=2048, num_hidden_layers=24, num_attention_heads=16,
        num_key_value_heads=16, intermediate_size=5632, moe_intermediate_size=1408,
        shared_expert_intermediate_size=5632, num_experts=60, num_experts_per_tok=4,
        decoder_sparse_step=1, vocab_size=151936, max_position_embeddings=8192,
        tie_word_embeddings=False, torch_dtype="bfloat16",
    ),
    "qwen3-30b-a3b": dict(
        model_type="qwen3_moe", hidden_size=2048, num_hidden_layers=48, num_attention_heads=32,
        num_key_value_heads=4, head_dim=128, intermediate_size=6144, moe_intermediate_size=768,
        num_experts=128, num_experts_per_tok=8, decoder_sparse_step=1, vocab_size=151936,
        max_position_embeddings=40960, tie_word_embeddings=False, torch_dtype="bfloat16",
    ),
    "gemma-2b": dict(
        model_type="gemma", hidden_size=2048, num_hidden_layers=18, num_attention_heads=8,
        num_key_value_heads=1, head_dim=256, intermediate_size=16384, vocab_size=256000,
        max_position_embeddings=8192, torch_dtype="bfloat16",
    ),
    "gemma-7b": dict(
        model_type="gemma", hidden_size=3072, num_hidden_layers=28, num_attention_heads=16,
        num_key_value_heads=16, head_dim=256, intermediate_size=24576, vocab_size=256000,
        max_position_embeddings=8192, torch_dtype="bfloat16",
    ),
    "gemma-2-9b": dict(
        model_type="gemma2", hidden_size=3584, num_hidden_layers=42, num_attention_heads=16,
        num_key_value_heads=8, head_dim=256, intermediate_size=14336, vocab_size=256000,
        max_position_embeddings=8192, sliding_window=4096, query_pre_attn_scalar=256,
        torch_dtype="bfloat16",
    ),
    "gemma-3-1b": dict(
        model_type="gemma3_text", hidden_size=1152, num_hidden_layers=26, num_attention_heads=4,
        num_key_value_heads=1, head_dim=256, intermediate_size=6912, vocab_size=262144,
        max_position_embeddings=32768, sliding_window=512, query_pre_attn_scalar=256,
        layer_types=[
            "full_attention" if (i + 1) % 6 == 0 else "sliding_attention" for i in range(26)
        ],
        torch_dtype="bfloat16",
    ),
    "phi-3-mini-4k": dict(
        model_type="phi3", hidden_size=3072, num_hidden_layers=32, num_attention_heads=32,
        num_key_value_heads=32, intermediate_size=8192, vocab_size=32064,
        max_position_embeddings=4096, sliding_window=2047, tie_word_embeddings=False,
        torch_dtype="bfloat16",
    ),
    "olmo-1b": dict(
        model_type="olmo", hidden_size=2048, num_hidden_layers=16, num_attention_heads=16,
        num_key_value_heads=16, intermediate_size=8192, vocab_size=50304,
        max_position_embeddings=2048, tie_word_embeddings=True, torch_dtype="float32",
    ),
    "olmo-2-7b": dict(
        model_type="olmo2", hidden_size=4096, num_hidden_layers=32, num_attention_heads=32,
        num_key_value_heads=32, intermediate_size=11008, vocab_size=100352,
        max_position_embeddings=4096, tie_word_embeddings=False, torch_dtype="float32",
    ),
    "deepseek-v2-lite": dict(
        model_type="deepseek_v2", hidden_size=2048, num_hidden_layers=27, num_attention_heads=16,
        num_key_value_heads=16, q_lora_rank=None, kv_lora_rank=512, qk_nope_head_dim=128,
        qk_rope_head_dim=64, v_head_dim=128, intermediate_size=10944, moe_intermediate_size=1408,
        n_routed_experts=64, n_shared_experts=2, num_experts_per_tok=6, first_k_dense_replace=1,
        moe_layer_freq=1, vocab_size=102400, max_position_embeddings=163840,
        tie_word_embeddings=False, torch_dtype="bfloat16",
    ),
    "deepseek-v3": dict(
        model_type="deepseek_v3", hidden_size=7168, num_hidden_layers=61,
        num_attention_heads=128, num_key_value_heads=128, q_lora_rank=1536, kv_lora_rank=512,
        qk_nope_head_dim=128, qk_rope_head_dim=64, v_head_dim=128, intermediate_size=18432,
        moe_intermediate_size=2048, n_routed_experts=256, n_shared_experts=1,
        num_experts_per_tok=8, first_k_dense_replace=3, moe_layer_freq=1, vocab_size=129280,
        max_position_embeddings=163840, tie_word_embeddings=False, torch_dtype="bfloat16",
    ),
    "gpt-oss-20b": dict(
        model_type="gpt_oss", hidden_size=2880, num_hidden_layers=24, num_attention_heads=64,
        num_key_value_heads=8, head_dim=64, intermediate_size=2880, num_local_experts=32,
        num_experts_per_tok=4, experts_per_token=4, vocab_size=201088, sliding_window=128,
        max_position_embeddings=131072, attention_bias=True, tie_word_embeddings=False,
        layer_types=[
            "sliding_attention" if i % 2 == 0 else "full_attention" for i in range(24)
        ],
        torch_dtype="bfloat16",
    ),
    "bert-base-uncased": dict(
        model_type="bert", hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
        intermediate_size=3072, vocab_size=30522, max_position_embeddings=512,
        type_vocab_size=2, torch_dtype="float32",
    ),
    "roberta-base": dict(
        model_type="roberta", hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
        intermediate_size=3072, vocab_size=50265, max_position_embeddings=514,
        type_vocab_size=1, pad_token_id=1, torch_dtype="float32",
    ),
    "distilbert-base-uncased": dict(
        model_type="distilbert", dim=768, n_layers=6, n_heads=12, hidden_dim=3072,
        vocab_size=30522, max_position_embeddings=512, torch_dtype="float32",
    ),
}  # fmt: skip

ENCODERS = {"bert", "roberta", "distilbert"}


def count(cfg_dict: dict[str, Any]) -> tuple[int, str, dict[str, Any]]:
    import torch
    from transformers import AutoConfig, AutoModel, AutoModelForCausalLM

    kwargs = {k: v for k, v in cfg_dict.items() if k not in ("model_type", "torch_dtype")}
    cfg = AutoConfig.for_model(cfg_dict["model_type"], **kwargs)
    auto = AutoModel if cfg_dict["model_type"] in ENCODERS else AutoModelForCausalLM
    with torch.device("meta"):
        model = auto.from_config(cfg)
    written = {**cfg.to_diff_dict(), **cfg_dict}
    written.pop("transformers_version", None)
    return int(model.num_parameters()), type(model).__name__, written


# configs shaped like the published ones, kept as they are (no keys filled in): each is
# counted as the class its `architectures` names (a multimodal one: its text model)
GEMMA3_4B_IT = dict(
    architectures=["Gemma3ForConditionalGeneration"], model_type="gemma3",
    boi_token_index=255999, eoi_token_index=256000, eos_token_id=[1, 106],
    image_token_index=262144, initializer_range=0.02, mm_tokens_per_image=256,
    text_config=dict(
        hidden_size=2560, intermediate_size=10240, model_type="gemma3_text",
        num_hidden_layers=34, rope_scaling={"factor": 8.0, "rope_type": "linear"},
        sliding_window=1024,
    ),
    torch_dtype="bfloat16",
    vision_config=dict(
        hidden_size=1152, image_size=896, intermediate_size=4304,
        model_type="siglip_vision_model", num_attention_heads=16, num_hidden_layers=27,
        patch_size=14, vision_use_head=False,
    ),
)  # fmt: skip


LLAVA_15_7B = dict(
    architectures=["LlavaForConditionalGeneration"], model_type="llava",
    image_token_index=32000, vision_feature_layer=-2,
    vision_feature_select_strategy="default",
    text_config=dict(
        model_type="llama", hidden_size=4096, intermediate_size=11008, num_hidden_layers=32,
        num_attention_heads=32, vocab_size=32064, max_position_embeddings=4096,
        rms_norm_eps=1e-5,
    ),
    vision_config=dict(
        model_type="clip_vision_model", hidden_size=1024, image_size=336,
        intermediate_size=4096, num_attention_heads=16, num_hidden_layers=24, patch_size=14,
        projection_dim=768, vocab_size=32000,
    ),
    torch_dtype="float16",
)  # fmt: skip
# multimodal configs counted as their `architectures` class, the towers included
MULTIMODAL: dict[str, dict[str, Any]] = {
    "gemma-3-4b-it-with-vision": GEMMA3_4B_IT,
    "llava-1.5-7b": LLAVA_15_7B,
    "llava-two-feature-layers-siglip-head": {
        **LLAVA_15_7B,
        "vision_feature_layer": [-2, -5],
        "vision_config": dict(
            model_type="siglip_vision_model", hidden_size=768, image_size=224,
            intermediate_size=3072, num_attention_heads=12, num_hidden_layers=4, patch_size=16,
        ),
    },
}  # fmt: skip


def count_full(cfg_dict: dict[str, Any]) -> tuple[int, str]:
    """transformers' count of the multimodal class itself (text model, towers, projector)."""
    import torch
    import transformers
    from transformers import AutoConfig

    kwargs = {k: v for k, v in cfg_dict.items() if k not in ("model_type", "torch_dtype")}
    cfg = AutoConfig.for_model(cfg_dict["model_type"], **kwargs)
    with torch.device("meta"):
        model = getattr(transformers, cfg_dict["architectures"][0])(cfg)
    return int(model.num_parameters()), type(model).__name__


def _encoder(base: str, arch: str, **extra: Any) -> dict[str, Any]:
    return {**CONFIGS[base], "architectures": [arch], **extra}


LABELS3 = {"0": "negative", "1": "neutral", "2": "positive"}
EXTRA: dict[str, dict[str, Any]] = {
    "gemma-3-4b-it": GEMMA3_4B_IT,
    "bert-base-uncased-mlm": _encoder("bert-base-uncased", "BertForMaskedLM"),
    "bert-base-uncased-mlm-untied": _encoder(
        "bert-base-uncased", "BertForMaskedLM", tie_word_embeddings=False
    ),
    "bert-base-uncased-pretraining": _encoder("bert-base-uncased", "BertForPreTraining"),
    "bert-base-uncased-nsp": _encoder("bert-base-uncased", "BertForNextSentencePrediction"),
    "bert-base-uncased-seqcls": _encoder("bert-base-uncased", "BertForSequenceClassification"),
    "bert-base-uncased-seqcls-3": _encoder(
        "bert-base-uncased", "BertForSequenceClassification", id2label=LABELS3
    ),
    "bert-base-uncased-tokcls-9": _encoder(
        "bert-base-uncased", "BertForTokenClassification", num_labels=9
    ),
    "bert-base-uncased-qa": _encoder("bert-base-uncased", "BertForQuestionAnswering"),
    "bert-base-uncased-mc": _encoder("bert-base-uncased", "BertForMultipleChoice"),
    "bert-base-uncased-lmhead": _encoder("bert-base-uncased", "BertLMHeadModel"),
    "roberta-base-mlm": _encoder("roberta-base", "RobertaForMaskedLM"),
    "roberta-base-mlm-untied": _encoder(
        "roberta-base", "RobertaForMaskedLM", tie_word_embeddings=False
    ),
    "roberta-base-causal": _encoder("roberta-base", "RobertaForCausalLM"),
    "roberta-base-seqcls-3": _encoder(
        "roberta-base", "RobertaForSequenceClassification", id2label=LABELS3
    ),
    "roberta-base-tokcls-9": _encoder("roberta-base", "RobertaForTokenClassification", num_labels=9),
    "roberta-base-qa": _encoder("roberta-base", "RobertaForQuestionAnswering"),
    "roberta-base-mc": _encoder("roberta-base", "RobertaForMultipleChoice"),
    "xlm-roberta-base-mlm": dict(
        model_type="xlm-roberta", architectures=["XLMRobertaForMaskedLM"], vocab_size=250002,
        max_position_embeddings=514, type_vocab_size=1, torch_dtype="float32",
    ),
    "distilbert-base-uncased-mlm": _encoder("distilbert-base-uncased", "DistilBertForMaskedLM"),
    "distilbert-base-uncased-mlm-untied": _encoder(
        "distilbert-base-uncased", "DistilBertForMaskedLM", tie_word_embeddings=False
    ),
    "distilbert-base-uncased-seqcls-3": _encoder(
        "distilbert-base-uncased", "DistilBertForSequenceClassification", id2label=LABELS3
    ),
    "distilbert-base-uncased-tokcls-9": _encoder(
        "distilbert-base-uncased", "DistilBertForTokenClassification", num_labels=9
    ),
    "distilbert-base-uncased-qa": _encoder(
        "distilbert-base-uncased", "DistilBertForQuestionAnswering"
    ),
    "distilbert-base-uncased-mc": _encoder("distilbert-base-uncased", "DistilBertForMultipleChoice"),
}  # fmt: skip


def count_extra(cfg_dict: dict[str, Any]) -> tuple[int, str]:
    """transformers' count of the class `architectures` names, built on the meta device."""
    import torch
    import transformers
    from transformers import AutoConfig, AutoModelForCausalLM

    kwargs = {k: v for k, v in cfg_dict.items() if k not in ("model_type", "torch_dtype")}
    cfg = AutoConfig.for_model(cfg_dict["model_type"], **kwargs)
    with torch.device("meta"):
        if hasattr(cfg, "text_config") and cfg_dict.get("text_config") is not None:
            model = AutoModelForCausalLM.from_config(cfg.get_text_config())
        else:
            model = getattr(transformers, cfg_dict["architectures"][0])(cfg)
    return int(model.num_parameters()), type(model).__name__


def config_defaults() -> dict[str, dict[str, Any]]:
    """Each supported class's `__init__` defaults for the keys gputui reads (None ones too)."""
    import inspect

    from transformers import CONFIG_MAPPING

    sys.path.insert(0, str(ROOT / "src"))
    from gputui.fit.importers.hfdefaults import DEFAULTS, READ_KEYS

    out: dict[str, dict[str, Any]] = {}
    for mt in DEFAULTS:
        params = inspect.signature(CONFIG_MAPPING[mt].__init__).parameters
        out[mt] = {
            key: p.default
            for key, p in sorted(params.items())
            if key in READ_KEYS and p.default is not inspect.Parameter.empty
        }
        ours = dict(DEFAULTS[mt])
        theirs = {key: v for key, v in out[mt].items() if v is not None}
        if ours != theirs:
            raise SystemExit(f"hfdefaults.DEFAULTS[{mt!r}] differs from transformers: {theirs}")
    return out


def write_extra() -> None:
    import transformers

    stamp = {
        "_generated_by": f"scripts/gen_hf_fixtures.py, transformers {transformers.__version__}"
    }
    fixtures = ROOT / "tests" / "fixtures" / "hf"
    (fixtures / "config_defaults.json").write_text(
        json.dumps(stamp | config_defaults(), indent=2) + "\n"
    )
    extra: dict[str, Any] = {}
    for name, cfg in EXTRA.items():
        n, cls = count_extra(cfg)
        extra[name] = {"class": cls, "num_parameters": n, "config": cfg}
        print(f"{name:<34} {cls:<36} {n:>16,}", flush=True)
    for name, cfg in MULTIMODAL.items():
        n, cls = count_full(cfg)
        extra[name] = {"class": cls, "num_parameters": n, "config": cfg}
        print(f"{name:<34} {cls:<36} {n:>16,}", flush=True)
    (fixtures / "extra_counts.json").write_text(json.dumps(stamp | extra, indent=2) + "\n")


def main(argv: list[str]) -> int:
    only = set(argv)
    out_dir = ROOT / "examples" / "llm"
    out_dir.mkdir(parents=True, exist_ok=True)
    counts_path = ROOT / "tests" / "fixtures" / "hf" / "param_counts.json"
    counts: dict[str, Any] = json.loads(counts_path.read_text()) if counts_path.exists() else {}
    import transformers

    if "--extra" in only:
        write_extra()
        return 0
    for name, cfg in CONFIGS.items():
        if only and name not in only:
            continue
        n, cls, written = count(cfg)
        (out_dir / f"{name}.json").write_text(json.dumps(written, indent=2, sort_keys=True) + "\n")
        counts[name] = {"class": cls, "num_parameters": n}
        print(f"{name:<26} {cls:<28} {n:>16,}", flush=True)
    counts_path.write_text(
        json.dumps(
            {
                "_generated_by": f"scripts/gen_hf_fixtures.py, transformers {transformers.__version__}"
            }
            | {k: v for k, v in sorted(counts.items()) if not k.startswith("_")},
            indent=2,
        )
        + "\n"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
