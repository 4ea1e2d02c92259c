"""Keys a config.json leaves out take its config class's defaults, as in transformers.

tests/fixtures/hf/config_defaults.json holds transformers' own `__init__` defaults
(written by scripts/gen_hf_fixtures.py --extra), so this runs without transformers;
where transformers is importable the table is also compared with it directly.
"""

from __future__ import annotations

import inspect
import json
from pathlib import Path
from typing import Any

import pytest

from gputui.fit.importers.hfdefaults import DEFAULTS, READ_KEYS
from gputui.fit.importers.hfkeys import LLAMA_LIKE, from_hf_dict
from gputui.fit.transformer.config import ConfigError
from gputui.fit.transformer.layout import layout

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "hf"
EXPECTED: dict[str, dict[str, Any]] = {
    k: v
    for k, v in json.loads((FIXTURES / "config_defaults.json").read_text()).items()
    if not k.startswith("_")
}
EXTRA = json.loads((FIXTURES / "extra_counts.json").read_text())
CLASSIC = ("gpt2", "gpt_neox", "gptj", "opt", "bert", "roberta", "xlm-roberta", "camembert")
SUPPORTED = sorted({*LLAMA_LIKE, *CLASSIC, "distilbert"})


def test_every_supported_model_type_has_transformers_defaults() -> None:
    assert sorted(DEFAULTS) == sorted(EXPECTED) == SUPPORTED


@pytest.mark.parametrize("model_type", SUPPORTED)
def test_table_equals_transformers_defaults(model_type: str) -> None:
    theirs = {k: v for k, v in EXPECTED[model_type].items() if v is not None}
    assert dict(DEFAULTS[model_type]) == theirs


@pytest.mark.parametrize("model_type", SUPPORTED)
def test_table_equals_live_transformers(model_type: str) -> None:
    transformers = pytest.importorskip("transformers")
    params = inspect.signature(transformers.CONFIG_MAPPING[model_type].__init__).parameters
    theirs = {
        k: p.default
        for k, p in params.items()
        if k in READ_KEYS and p.default is not inspect.Parameter.empty and p.default is not None
    }
    assert dict(DEFAULTS[model_type]) == theirs


def test_gemma3_4b_it_text_config_takes_gemma3_text_defaults() -> None:
    """Its text_config has no num_attention_heads, num_key_value_heads, head_dim or
    vocab_size: gputui refused it ("text_config.num_attention_heads: is required")."""
    entry = EXTRA["gemma-3-4b-it"]
    text = entry["config"]["text_config"]
    assert not {"num_attention_heads", "num_key_value_heads", "head_dim"} & set(text)
    cfg = from_hf_dict(entry["config"])
    assert (cfg.num_heads, cfg.num_kv_heads, cfg.head_dim) == (8, 4, 256)
    assert cfg.vocab_size == 262_208 and cfg.tie_word_embeddings
    assert cfg.sliding_window == 1024 and cfg.torch_dtype == "bfloat16"
    assert cfg.vision is not None  # the text model's count, then the towers beside it
    assert layout(cfg).params - cfg.vision.params == entry["num_parameters"] == 3_880_263_168


def test_text_config_without_model_type_takes_the_parents_text_class() -> None:
    raw = json.loads(json.dumps(EXTRA["gemma-3-4b-it"]["config"]))
    del raw["text_config"]["model_type"]
    cfg = from_hf_dict(raw)
    assert cfg.vision is not None
    assert layout(cfg).params - cfg.vision.params == EXTRA["gemma-3-4b-it"]["num_parameters"]


@pytest.mark.parametrize(
    ("raw", "field", "value"),
    [
        # a class default head_dim is not hidden_size / num_attention_heads
        (
            {
                "model_type": "gemma",
                "hidden_size": 2048,
                "num_attention_heads": 8,
                "num_key_value_heads": 1,
            },
            "head_dim",
            256,
        ),  # fmt: skip
        ({"model_type": "qwen3", "hidden_size": 2048, "num_attention_heads": 32}, "head_dim", 128),
        ({"model_type": "xlm-roberta"}, "vocab_size", 30522),
        ({"model_type": "mistral"}, "sliding_window", 4096),
        ({"model_type": "mistral", "sliding_window": None}, "sliding_window", None),
        ({"model_type": "llama", "num_attention_heads": 16}, "num_kv_heads", 16),
    ],
)
def test_absent_keys_take_the_class_default(raw: dict, field: str, value: object) -> None:
    assert getattr(from_hf_dict(raw), field) == value


@pytest.mark.parametrize("model_type", SUPPORTED)
def test_model_type_alone_is_the_class_default_model(model_type: str) -> None:
    """`AutoConfig.for_model(model_type)`: every size from the class's defaults."""
    want = EXPECTED[model_type]
    if model_type == "deepseek_v2":
        # DeepseekV2Config() routes to 64 experts with num_experts_per_tok None: not a model
        with pytest.raises(ConfigError) as err:
            from_hf_dict({"model_type": model_type})
        assert err.value.field == "num_experts_per_tok"
        return
    cfg = from_hf_dict({"model_type": model_type})
    hidden = next(want[k] for k in ("hidden_size", "n_embd", "dim") if k in want)
    layers = next(want[k] for k in ("num_hidden_layers", "n_layer", "n_layers") if k in want)
    assert (cfg.hidden_size, cfg.num_layers, cfg.vocab_size) == (
        hidden,
        layers,
        want["vocab_size"],
    )


def test_an_explicit_null_is_not_replaced_by_the_default() -> None:
    with pytest.raises(ConfigError) as err:
        from_hf_dict({"model_type": "llama", "num_hidden_layers": None})
    assert err.value.field == "num_hidden_layers"


@pytest.mark.parametrize(
    "name", ["gemma-3-4b-it-with-vision", "llava-1.5-7b", "llava-two-feature-layers-siglip-head"]
)
def test_a_multimodal_config_counts_its_vision_tower_and_projector(name: str) -> None:
    """transformers' count of the ForConditionalGeneration class (built on the meta device):
    gemma-3-4b-it's SigLIP tower and projector are 419,816,304 parameters more than its
    text model, which was all gputui counted."""
    entry = EXTRA[name]
    cfg = from_hf_dict(entry["config"])
    assert cfg.vision is not None
    assert layout(cfg).params == entry["num_parameters"]
    (note,) = [w for w in cfg.warnings if w.startswith("vision tower")]
    assert f"{cfg.vision.image_size}x{cfg.vision.image_size} image" in note


def test_gemma3_4b_it_vision_adds_the_towers_weights_and_an_image_moment() -> None:
    from gputui.fit.transformer.estimate import memory
    from gputui.fit.transformer.model import from_config
    from gputui.fit.transformer.workload import Workload

    cfg = from_hf_dict(EXTRA["gemma-3-4b-it-with-vision"]["config"])
    assert layout(cfg).params - EXTRA["gemma-3-4b-it"]["num_parameters"] == 419_816_304
    model = from_config(cfg, "gemma-3-4b-it", "test")
    wl = Workload(mode="generate", batch_size=2, seq_len=64, new_tokens=4, weights="bf16")
    names = [ph.name for ph in memory(model, wl).stages[0].phases]
    assert "vision tower" in names


@pytest.mark.parametrize(
    ("vision", "field"),
    [
        ({"model_type": "qwen2_5_vl"}, "vision_config.model_type"),
        ({"model_type": "siglip_vision_model", "image_size": 1 << 30, "patch_size": 2},
         "vision_config.image_size"),
        ({"model_type": "clip_vision_model", "patch_size": 15}, "vision_config.patch_size"),
    ],
)  # fmt: skip
def test_a_tower_gputui_cannot_count_is_refused_with_the_reason(
    vision: dict[str, Any], field: str
) -> None:
    raw = {**EXTRA["llava-1.5-7b"]["config"], "vision_config": vision}
    with pytest.raises(ConfigError) as err:
        from_hf_dict(raw)
    assert err.value.field == field


def test_a_top_level_multimodal_config_is_not_estimated_as_text_only() -> None:
    """Qwen2.5-VL keeps its text keys at the top beside vision_config: it was estimated as an
    unknown model_type's range with no word about its tower."""
    raw = {
        "model_type": "qwen2_5_vl", "hidden_size": 3584, "intermediate_size": 18944,
        "num_hidden_layers": 28, "num_attention_heads": 28, "num_key_value_heads": 4,
        "vocab_size": 152064, "vision_config": {"depth": 32, "hidden_size": 1280},
    }  # fmt: skip
    with pytest.raises(ConfigError) as err:
        from_hf_dict(raw)
    assert err.value.field == "vision_config.model_type"
    assert "'qwen2_5_vl' vision tower is not modelled" in str(err.value)
