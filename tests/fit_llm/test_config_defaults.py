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

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "hf"
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
    assert layout(cfg).params == entry["num_parameters"] == 3_880_263_168


def test_text_config_without_model_type_takes_the_parents_text_class() -> None:
    raw = json.loads(json.dumps(EXTRA["gemma-3-4b-it"]["config"]))
    del raw["text_config"]["model_type"]
    assert layout(from_hf_dict(raw)).params == EXTRA["gemma-3-4b-it"]["num_parameters"]


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
