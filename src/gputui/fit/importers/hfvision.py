"""A multimodal config's vision tower and projector (`vision_config`), counted as transformers
builds them for the `...ForConditionalGeneration` class a user loads.

Two towers are modelled, module by module from transformers' code:
  * SigLIP (`siglip_vision_model`; Gemma 3, PaliGemma): a biased patch convolution, a
    learned position per patch, layers of LayerNorm, biased q/k/v/o, LayerNorm, biased
    fc1/fc2, a post-LayerNorm, and (`vision_use_head`) an attention-pooling head;
  * CLIP (`clip_vision_model`; LLaVA): a class embedding, a bias-free patch convolution,
    positions for the patches and the class token, a pre- and a post-LayerNorm, the same
    layers.
Projectors: Gemma 3's RMS norm and bias-free projection into the text width; LLaVA's two
biased linears (vision width x the feature layers, text width). Any other tower (Qwen2.5-VL,
Llama 4, Mllama, ...) is refused with the reason: its count is not known, and an estimate
of the text model alone would be a confident under-count.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from gputui.fit.importers.hfread import Keys, show
from gputui.fit.transformer.config import ConfigError, TransformerConfig, VisionTower
from gputui.fit.transformer.vision import tower_note

# transformers' config-class defaults for the keys read here
_SIGLIP = {
    "hidden_act": "gelu_pytorch_tanh", "hidden_size": 768, "intermediate_size": 3072, "num_hidden_layers": 12,
    "num_attention_heads": 12, "num_channels": 3, "image_size": 224, "patch_size": 16,
    "vision_use_head": True,
}  # fmt: skip
_CLIP = {
    "hidden_act": "quick_gelu", "hidden_size": 768, "intermediate_size": 3072, "num_hidden_layers": 12,
    "num_attention_heads": 12, "num_channels": 3, "image_size": 224, "patch_size": 32,
}  # fmt: skip
# a parent model_type -> its vision_config's default model_type
_DEFAULT_TOWER = {"gemma3": "siglip_vision_model", "llava": "clip_vision_model"}
MODELLED = ("siglip_vision_model", "clip_vision_model")
MAX_CHANNELS = 64  # images have 1-4; hyperspectral ones tens
MAX_PATCHES = 1 << 20  # a 14,336-pixel square at 14-pixel patches; Gemma 3: 4,096


def _layers(h: int, inter: int, n: int) -> int:
    """n encoder layers: two LayerNorms, biased q/k/v/o, biased fc1/fc2."""
    return n * (2 * 2 * h + 4 * (h * h + h) + (h * inter + inter) + (inter * h + h))


def _tower(v: Keys, kind: str) -> tuple[int, int, int, int, int, int, int, int]:
    h, inter = v.integer("hidden_size"), v.integer("intermediate_size")
    n, heads = v.integer("num_hidden_layers"), v.integer("num_attention_heads")
    c, img, patch = v.integer("num_channels"), v.integer("image_size"), v.integer("patch_size")
    if img % patch:
        raise ConfigError(v._field("patch_size"), f"{patch} does not divide image_size {img}")
    if h % heads:
        raise ConfigError(v._field("num_attention_heads"), f"{heads} does not divide {h}")
    if c > MAX_CHANNELS:
        raise ConfigError(v._field("num_channels"), f"{c} is over the bound {MAX_CHANNELS}")
    patches = (img // patch) ** 2
    if patches > MAX_PATCHES:
        raise ConfigError(
            v._field("image_size"),
            f"{img} makes {patches:,} patches of {patch}, over the bound {MAX_PATCHES:,}",
        )
    if kind == "siglip_vision_model":
        params = c * patch * patch * h + h + patches * h + _layers(h, inter, n) + 2 * h
        if v.flag("vision_use_head", True):
            # probe, nn.MultiheadAttention (in_proj, out_proj), LayerNorm, MLP
            params += h + (3 * h * h + 3 * h) + (h * h + h) + 2 * h
            params += (h * inter + inter) + (inter * h + h)
    else:  # CLIP: class token, bias-free patch conv, pre- and post-LayerNorm
        params = h + c * patch * patch * h + (patches + 1) * h + 2 * h + _layers(h, inter, n)
        params += 2 * h
    return h, inter, n, heads, c, img, patch, params


def vision_tower(raw: Mapping[str, Any], text_hidden: int, prefix: str = "") -> VisionTower:
    """The tower and projector of a config with a `vision_config` (ConfigError if not modelled)."""
    parent = raw.get("model_type")
    vc = raw.get("vision_config")
    if not isinstance(vc, Mapping):
        raise ConfigError(f"{prefix}vision_config", "must be a JSON object")
    kind = vc.get("model_type", _DEFAULT_TOWER.get(str(parent), ""))
    if kind not in MODELLED:
        name = show(kind) if kind else f"the {show(parent)} vision tower"
        raise ConfigError(
            f"{prefix}vision_config.model_type",
            f"{name} is not modelled (gputui counts SigLIP and CLIP towers); its parameters "
            "and activations would be missing from the estimate. For the text model alone, "
            "give a config without vision_config (its text_config on its own)",
        )
    defaults = _SIGLIP if kind == "siglip_vision_model" else _CLIP
    v = Keys({**defaults, **vc}, f"{prefix}vision_config.")
    h, inter, n, heads, c, img, patch, params = _tower(v, kind)
    k = Keys(raw, prefix)
    patches = (img // patch) ** 2
    if parent == "gemma3":
        params += h + h * text_hidden  # mm_soft_emb_norm (RMS), mm_input_projection_weight
        tokens = k.integer("mm_tokens_per_image", 256)
    elif parent == "llava":
        layer = raw.get("vision_feature_layer", -2)
        feeds = len(layer) if isinstance(layer, list) else 1
        bias = 1 if k.flag("multimodal_projector_bias", True) else 0
        params += h * feeds * text_hidden + bias * text_hidden
        params += text_hidden * text_hidden + bias * text_hidden
        default = k.text("vision_feature_select_strategy") != "full"
        tokens = patches if default else patches + 1
    else:
        raise ConfigError(
            f"{prefix}model_type",
            f"{show(parent)}: a {kind} tower under this model's projector is not modelled "
            "(gputui knows Gemma 3's and LLaVA's)",
        )
    act = v.text("hidden_act") or str(defaults["hidden_act"])
    clip = kind == "clip_vision_model"
    return VisionTower(kind, h, n, heads, inter, img, patch, c, params, tokens, act, clip)


def with_towers(
    raw: Mapping[str, Any], cfg: TransformerConfig, prefix: str = ""
) -> TransformerConfig:
    """`cfg` (the text model) with the towers `raw` names beside it; an audio tower, or a
    vision tower gputui cannot count, is refused (ConfigError) rather than left out."""
    for key in ("audio_config", "speech_config"):
        if raw.get(key) is not None:
            raise ConfigError(
                f"{prefix}{key}",
                "audio towers are not modelled; their parameters and activations would be "
                "missing from the estimate. For the text model alone, give its text_config "
                "on its own",
            )
    if raw.get("vision_config") is None:
        return cfg
    tower = vision_tower(raw, cfg.hidden_size, prefix)
    return replace(cfg, vision=tower, warnings=cfg.warnings + (tower_note(tower),))
