"""Hugging Face config.json (a dict) to a TransformerConfig, per model_type.

Each architecture names the same quantities differently (GPT-2's n_embd, OPT's
ffn_dim, DistilBERT's dim) and leaves some keys out when they equal its config
class's default, so the defaults below are transformers' own. Every problem is
a ConfigError naming the key.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from gputui.fit.importers.hfdefaults import TEXT_MODEL_TYPE, with_defaults
from gputui.fit.importers.hffamilies import READERS
from gputui.fit.importers.hfheads import decoder_head_note, encoder_head
from gputui.fit.importers.hfquant import quantization
from gputui.fit.importers.hfread import Keys, show
from gputui.fit.importers.hfunknown import bounded
from gputui.fit.importers.hfvision import with_towers
from gputui.fit.transformer.bounds import bound_of
from gputui.fit.transformer.config import ConfigError, Family, Mla, Moe, TransformerConfig

LLAMA_LIKE = {
    "llama": "llama",
    "mistral": "mistral",
    "mixtral": "mixtral",
    "qwen2": "qwen2",
    "qwen3": "qwen3",
    "qwen3_moe": "qwen3_moe",
    "qwen2_moe": "qwen2_moe",
    "gemma": "gemma",
    "gemma2": "gemma2",
    "gemma3_text": "gemma3",
    "phi3": "phi3",
    "olmo": "olmo",
    "olmo2": "olmo2",
    "deepseek_v2": "deepseek_v2",
    "deepseek_v3": "deepseek_v3",
    "gpt_oss": "gpt_oss",
    "granite": "granite",
    "smollm3": "smollm3",
}


def _heads(k: Keys, hidden: int, heads_key: str, hidden_key: str) -> tuple[int, int]:
    """Heads and head width of a GPT-2-era model: these split the width evenly (their
    attention refuses a width the heads do not divide, whatever head_dim says)."""
    heads = k.integer(heads_key)
    if hidden % heads:
        raise ConfigError(k._field(heads_key), f"{heads} does not divide {hidden_key} {hidden}")
    return heads, hidden // heads


def _dtype(k: Keys) -> str | None:
    return k.text("torch_dtype") or k.text("dtype")


@dataclass(frozen=True, slots=True)
class _Classic:
    """Where a GPT-2-era architecture keeps the common quantities, with its class's defaults.

    These models (GPT-2, GPT-J, GPT-NeoX, OPT, BERT, DistilBERT) share one block layout:
    a LayerNorm, full multi-head attention and a plain (ungated) GELU MLP; only the key
    names, the defaults and a few switches differ, which is all this table holds.
    """

    hidden: tuple[str, int]
    heads: str
    layers: tuple[str, int]
    inner: tuple[str, int | None]  # default None: 4 x hidden when the key is absent
    vocab: int
    positions: tuple[str, int]
    attention_dropout: tuple[str, float]
    hidden_dropout: tuple[str, float]
    tie: bool | None  # None: always tied, the key is not read (BERT, DistilBERT)
    learned_positions: bool = False  # a learned position table of `positions` rows
    # the MLP's activation (an ACT2FN name): GPT-2's and GPT-J's default gelu_new keeps
    # four tensors for backward where gelu keeps one (activations_fn.py)
    act: tuple[str, str] = ("hidden_act", "gelu")


_GPT2 = _Classic(
    ("n_embd", 768), "n_head", ("n_layer", 12), ("n_inner", None), 50257,
    ("n_positions", 1024), ("attn_pdrop", 0.1), ("resid_pdrop", 0.1), True, True,
    ("activation_function", "gelu_new"),
)  # fmt: skip
_GPT_NEOX = _Classic(
    ("hidden_size", 6144), "num_attention_heads", ("num_hidden_layers", 44),
    ("intermediate_size", 24576), 50432, ("max_position_embeddings", 2048),
    ("attention_dropout", 0.0), ("hidden_dropout", 0.0), False,
)  # fmt: skip
_GPTJ = _Classic(
    ("n_embd", 4096), "n_head", ("n_layer", 28), ("n_inner", None), 50400,
    ("n_positions", 2048), ("attn_pdrop", 0.0), ("resid_pdrop", 0.0), False,
    act=("activation_function", "gelu_new"),
)  # fmt: skip
_OPT = _Classic(
    ("hidden_size", 768), "num_attention_heads", ("num_hidden_layers", 12),
    ("ffn_dim", 3072), 50272, ("max_position_embeddings", 2048),
    ("attention_dropout", 0.0), ("dropout", 0.1), True,
    act=("activation_function", "relu"),
)  # fmt: skip
_BERT = _Classic(
    ("hidden_size", 768), "num_attention_heads", ("num_hidden_layers", 12),
    ("intermediate_size", 3072), 30522, ("max_position_embeddings", 512),
    ("attention_probs_dropout_prob", 0.1), ("hidden_dropout_prob", 0.1), None, True,
)  # fmt: skip
_DISTILBERT = _Classic(
    ("dim", 768), "n_heads", ("n_layers", 6), ("hidden_dim", 3072), 30522,
    ("max_position_embeddings", 512), ("attention_dropout", 0.1), ("dropout", 0.1), None, True,
    ("activation", "gelu"),
)  # fmt: skip


def _classic(
    k: Keys, names: _Classic, model_type: str, family: Family, **switches: Any
) -> TransformerConfig:
    """A GPT-2-era config from its key table; `switches` set what the table does not."""
    h = k.integer(*names.hidden)
    heads, hd = _heads(k, h, names.heads, names.hidden[0])
    inner_key, inner_default = names.inner
    inner = (
        k.integer(inner_key, inner_default)
        if inner_default is not None or k.has(inner_key)
        else 4 * h
    )
    fields: dict[str, Any] = dict(
        tie_word_embeddings=True if names.tie is None else k.flag("tie_word_embeddings", names.tie),
        norm="layer",
        mlp="plain",
        qkv_bias=True,
        o_bias=True,
        mlp_bias=True,
        learned_positions=k.integer(*names.positions) if names.learned_positions else 0,
        attention_dropout=k.number(*names.attention_dropout),
        hidden_dropout=k.number(*names.hidden_dropout),
        torch_dtype=_dtype(k),
        activation=k.text(*names.act) or names.act[1],
        key_prefix=k.prefix,
    )
    fields.update(switches)
    return TransformerConfig(
        model_type,
        family,
        h,
        k.integer(*names.layers),
        heads,
        heads,
        hd,
        inner,
        k.integer("vocab_size", names.vocab),
        k.integer(*names.positions),
        **fields,
    )


def _gpt_neox(k: Keys) -> TransformerConfig:
    bias = k.flag("attention_bias", True)
    return _classic(k, _GPT_NEOX, "gpt_neox", "gpt_neox", qkv_bias=bias, o_bias=bias)


def _gptj(k: Keys) -> TransformerConfig:
    return _classic(k, _GPTJ, "gptj", "gptj", qkv_bias=False, o_bias=False, norms_per_layer=1)


def _opt(k: Keys) -> TransformerConfig:
    bias = k.flag("enable_bias", True)
    final = k.flag("do_layer_norm_before", True) and not k.flag("_remove_final_layer_norm", False)
    return _classic(
        k,
        _OPT,
        "opt",
        "opt",
        norm="layer" if k.flag("layer_norm_elementwise_affine", True) else "none",
        qkv_bias=bias,
        o_bias=bias,
        mlp_bias=bias,
        # OPT's position table has two extra rows (its padding offset)
        learned_positions=k.integer(*_OPT.positions) + 2,
        embed_dim=k.integer("word_embed_proj_dim", k.integer(*_OPT.hidden)),
        final_norm=final,
    )


def _bert(k: Keys, model_type: str) -> TransformerConfig:
    names = _BERT if model_type == "bert" else replace(_BERT, vocab=50265)
    return _classic(
        k,
        names,
        model_type,
        "bert",
        token_types=k.integer("type_vocab_size", 2, minimum=0),
        encoder=True,
    )


def _layer_types(k: Keys, n: int, default: Callable[[int], str]) -> tuple[str, ...]:
    raw = k.raw.get("layer_types")
    if raw is None:
        return tuple(default(i) for i in range(n))
    if not isinstance(raw, list):
        raise ConfigError(k._field("layer_types"), f"must be a list of {n} layer types")
    if len(raw) != n:
        raise ConfigError(
            k._field("layer_types"), f"has {len(raw)} entries for num_hidden_layers {n}"
        )
    out = []
    for t in raw:
        if t == "sliding_attention":
            out.append("sliding")
        elif t in ("full_attention", "chunked_attention"):
            out.append("full")
        else:
            raise ConfigError(k._field("layer_types"), f"unknown layer type {show(t)}")
    return tuple(out)


def _llama_like(k: Keys, model_type: str, kind: str) -> TransformerConfig:
    h = k.integer("hidden_size")
    layers = k.integer("num_hidden_layers")
    heads = k.integer("num_attention_heads")
    kv = k.integer("num_key_value_heads", heads)
    if heads % kv:
        raise ConfigError(
            k._field("num_key_value_heads"),
            f"{kv} does not divide num_attention_heads {heads}",
        )
    if k.has("head_dim"):
        hd = k.integer("head_dim")
    else:
        if h % heads:
            raise ConfigError(
                k._field("num_attention_heads"), f"{heads} does not divide hidden_size {h}"
            )
        hd = h // heads
    inter = k.integer("intermediate_size")
    vocab = k.integer("vocab_size")
    cfg = TransformerConfig(
        model_type,
        "llama",
        h,
        layers,
        heads,
        kv,
        hd,
        inter,
        vocab,
        k.opt_int("max_position_embeddings"),
        tie_word_embeddings=k.flag("tie_word_embeddings", kind in ("gemma", "gemma2", "gemma3")),
        qkv_bias=k.flag(
            "qkv_bias" if kind == "qwen2_moe" else "attention_bias",
            kind in ("qwen2", "qwen2_moe", "gpt_oss"),
        ),
        o_bias=k.flag("attention_bias", kind == "gpt_oss"),
        mlp_bias=k.flag("mlp_bias", False),
        attention_dropout=k.number("attention_dropout", 0.0),
        torch_dtype=_dtype(k),
        activation=k.text("hidden_act") or k.text("hidden_activation") or "silu",
        key_prefix=k.prefix,
    )
    window = k.opt_int("sliding_window", minimum=0) or None
    # Qwen ships a sliding_window value but only uses it when use_sliding_window is set
    if kind in ("qwen2", "qwen2_moe", "qwen3", "qwen3_moe", "smollm3") and not k.flag(
        "use_sliding_window", False
    ):
        window = None
    if kind == "gemma":
        cfg = replace(cfg, family="gemma")
    elif kind == "gemma2":
        cfg = replace(
            cfg,
            family="gemma",
            norms_per_layer=4,
            sliding_window=window or 4096,
            layer_types=_layer_types(k, layers, lambda i: "sliding" if i % 2 == 0 else "full"),
            # Gemma2Config's default is 30.0; only an explicit null turns it off
            logit_softcap="final_logit_softcapping" not in k.raw
            or k.number("final_logit_softcapping", 0.0) != 0.0,
        )
        window = cfg.sliding_window
    elif kind == "gemma3":
        pattern = k.integer("sliding_window_pattern", 6)
        cfg = replace(
            cfg,
            family="gemma",
            norms_per_layer=4,
            qk_norm="head",
            logit_softcap=k.number("final_logit_softcapping", 0.0) != 0.0,
            sliding_window=window or 4096,
            layer_types=_layer_types(
                k, layers, lambda i: "full" if (i + 1) % pattern == 0 else "sliding"
            ),
        )
        window = cfg.sliding_window
    elif kind == "phi3":
        cfg = replace(cfg, family="phi3")
    elif kind == "olmo":
        cfg = replace(cfg, family="olmo", norm="none")
    elif kind == "olmo2":
        cfg = replace(cfg, family="olmo2", qk_norm="full")
    elif kind in ("qwen3", "qwen3_moe"):
        cfg = replace(cfg, qk_norm="head")
    elif kind == "granite":
        # Granite divides the logits by logits_scaling into a second logits-sized tensor
        cfg = replace(cfg, logit_scale=k.number("logits_scaling", 1.0) != 1.0)
    elif kind == "gpt_oss":
        cfg = replace(
            cfg,
            family="gpt_oss",
            sliding_window=window or 128,
            layer_types=_layer_types(k, layers, lambda i: "sliding" if i % 2 == 0 else "full"),
        )
        window = cfg.sliding_window
    if kind not in ("gemma2", "gemma3", "gpt_oss"):
        if window is not None and k.raw.get("layer_types") is not None:
            cfg = replace(
                cfg, sliding_window=window, layer_types=_layer_types(k, layers, lambda i: "full")
            )
        else:
            cfg = replace(cfg, sliding_window=window)
    moe = _moe(k, kind, layers)
    if moe is not None:
        cfg = replace(cfg, moe=moe)
        if kind == "qwen2_moe":
            cfg = replace(cfg, family="qwen2_moe")
    if kind in ("deepseek_v2", "deepseek_v3"):
        mla = Mla(
            k.opt_int("q_lora_rank"),
            k.integer("kv_lora_rank"),
            k.integer("qk_nope_head_dim"),
            k.integer("qk_rope_head_dim"),
            k.integer("v_head_dim"),
        )
        # every head has its own K (nope+rope) and V: the cache of a non-MLA implementation
        cfg = replace(
            cfg,
            family="deepseek",
            mla=mla,
            num_kv_heads=heads,
            head_dim=mla.qk_nope_head_dim + mla.qk_rope_head_dim,
            qkv_bias=False,
            o_bias=False,
        )
    return cfg


def _top_k(k: Keys, key: str, default: int | None, experts_key: str, experts: int) -> int:
    """Experts per token, read from `key`: never more than the experts there are."""
    top = k.integer(key, default)
    if top > experts:
        raise ConfigError(
            k._field(key), f"{top} is more than the {experts} experts ({k._field(experts_key)})"
        )
    return top


def _moe(k: Keys, kind: str, layers: int) -> Moe | None:
    if kind == "mixtral":
        experts = k.integer("num_local_experts", 8)
        return Moe(
            experts,
            _top_k(k, "num_experts_per_tok", 2, "num_local_experts", experts),
            k.integer("intermediate_size"),
        )
    if kind == "gpt_oss":
        experts = k.integer("num_local_experts")
        key = "num_experts_per_tok" if k.has("num_experts_per_tok") else "experts_per_token"
        return Moe(
            experts,
            _top_k(k, key, 4, "num_local_experts", experts),
            k.integer("intermediate_size"),
            router_bias=True,
            expert_bias=True,
        )
    if kind in ("qwen2_moe", "qwen3_moe"):
        step = k.integer("decoder_sparse_step", 1)
        only = k.index_list("mlp_only_layers", layers)
        experts = k.integer("num_experts")
        dense = tuple(i for i in range(layers) if i in only or (i + 1) % step)
        shared = (
            k.integer("shared_expert_intermediate_size", 0, minimum=0) if kind == "qwen2_moe" else 0
        )
        return Moe(
            experts,
            _top_k(k, "num_experts_per_tok", None, "num_experts", experts),
            k.integer("moe_intermediate_size"),
            shared_intermediate=shared,
            shared_expert_gate=kind == "qwen2_moe" and shared > 0,
            dense_layers=dense,
        )
    if kind in ("deepseek_v2", "deepseek_v3"):
        routed = k.integer("n_routed_experts", 0, minimum=0)
        if routed == 0:
            return None
        first = k.integer("first_k_dense_replace", 0, minimum=0)
        freq = k.integer("moe_layer_freq", 1)
        dense = tuple(i for i in range(layers) if not (i >= first and i % freq == 0))
        moe_inter = k.integer("moe_intermediate_size")
        shared = moe_inter * k.integer("n_shared_experts", 0, minimum=0)
        if shared > bound_of("intermediate"):
            raise ConfigError(
                k._field("n_shared_experts"),
                f"{shared} shared-expert width (x moe_intermediate_size) is over the bound "
                f"{bound_of('intermediate')}",
            )
        return Moe(
            routed,
            _top_k(k, "num_experts_per_tok", None, "n_routed_experts", routed),
            moe_inter,
            shared_intermediate=shared,
            dense_layers=dense,
            score_correction_bias=kind == "deepseek_v3",
        )
    return None


def from_hf_dict(raw: Mapping[str, Any], prefix: str = "") -> TransformerConfig:
    """The transformer a config.json describes (raises ConfigError naming the key)."""
    if not isinstance(raw, Mapping):
        raise ConfigError(prefix or "config", "must be a JSON object")
    warnings: list[str] = []
    outer, outer_prefix = raw, prefix
    text = raw.get("text_config")
    if isinstance(text, Mapping) and not raw.get("num_hidden_layers"):
        merged = dict(text)
        for key in ("quantization_config", "torch_dtype", "dtype"):
            if key in raw and key not in merged:
                merged[key] = raw[key]
        parent = raw.get("model_type")
        if "model_type" not in merged and isinstance(parent, str) and parent in TEXT_MODEL_TYPE:
            merged["model_type"] = TEXT_MODEL_TYPE[parent]
        raw = merged
        prefix = f"{prefix}text_config."
    k = Keys(raw, prefix)
    model_type = k.text("model_type")
    if model_type is None:
        raise ConfigError(
            k._field("model_type"), "is required (is this a Hugging Face config.json?)"
        )
    mt = model_type.lower()
    # transformers fills every key a config.json leaves out from its class's defaults
    k = Keys(with_defaults(raw, mt), prefix)
    cfg: TransformerConfig
    if mt == "gpt2":
        cfg = _classic(k, _GPT2, "gpt2", "gpt2")
    elif mt == "gpt_neox":
        cfg = _gpt_neox(k)
    elif mt == "gptj":
        cfg = _gptj(k)
    elif mt == "opt":
        cfg = _opt(k)
    elif mt in ("bert", "roberta", "xlm-roberta", "camembert"):
        cfg = _bert(k, mt)
    elif mt == "distilbert":
        cfg = _classic(k, _DISTILBERT, "distilbert", "distilbert", encoder=True)
    elif mt in LLAMA_LIKE or mt == "gemma3":
        cfg = _llama_like(k, mt, LLAMA_LIKE.get(mt, "gemma3"))
    elif mt in READERS:
        cfg = READERS[mt](k)
    else:
        needed = (
            "hidden_size",
            "num_hidden_layers",
            "num_attention_heads",
            "intermediate_size",
            "vocab_size",
        )
        missing = [key for key in needed if not k.has(key)]
        if missing:
            raise ConfigError(
                k._field("model_type"),
                f"unknown model_type {show(model_type)} and no standard key {missing[0]} to estimate "
                "it as a Llama-style decoder",
            )
        cfg = bounded(k, model_type, _llama_like(k, mt, "llama"))
    if cfg.num_heads % cfg.num_kv_heads:
        raise ConfigError(k._field("num_key_value_heads"), "must divide the number of heads")
    cfg = encoder_head(k, cfg) if cfg.encoder else decoder_head_note(k, cfg)
    q = quantization(k)
    cfg = replace(cfg, quantization=q, warnings=cfg.warnings + tuple(warnings))
    return with_towers(outer, cfg, outer_prefix)
