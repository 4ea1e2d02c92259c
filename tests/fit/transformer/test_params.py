"""Parameter counts equal transformers' num_parameters() for every shipped config."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gputui.fit.importers.hfkeys import from_hf_dict
from gputui.fit.transformer.config import ConfigError
from gputui.fit.transformer.layout import layout

ROOT = Path(__file__).resolve().parents[3]
COUNTS = json.loads((ROOT / "tests/fixtures/hf/param_counts.json").read_text())
NAMES = sorted(k for k in COUNTS if not k.startswith("_"))


def load(name: str) -> dict:
    return json.loads((ROOT / "examples/llm" / f"{name}.json").read_text())


@pytest.mark.parametrize("name", NAMES)
def test_counts_equal_transformers(name: str) -> None:
    assert layout(from_hf_dict(load(name))).params == COUNTS[name]["num_parameters"]


def test_figures_are_in_the_fixtures() -> None:
    expected = {
        "gpt2": 124_439_808,
        "bert-base-uncased": 109_482_240,
        "llama-2-7b": 6_738_415_616,
        "llama-3-8b": 8_030_261_248,
        "mistral-7b-v0.1": 7_241_732_096,
    }
    for name, n in expected.items():
        assert layout(from_hf_dict(load(name))).params == n


def test_moe_active_params_count_chosen_experts_only() -> None:
    cfg = from_hf_dict(load("mixtral-8x7b"))
    lay = layout(cfg)
    # Mixtral 8x7B: ~12.9 B of 46.7 B are read per token (2 of 8 experts)
    assert 12.8e9 < lay.active_params(2) < 13.0e9
    assert lay.active_params(8) == lay.params


def test_sliding_and_full_layers() -> None:
    gemma2 = from_hf_dict(load("gemma-2-9b"))
    assert [gemma2.is_sliding(i) for i in range(4)] == [True, False, True, False]
    g3 = from_hf_dict(load("gemma-3-1b"))
    assert sum(not g3.is_sliding(i) for i in range(g3.num_layers)) == 4  # every 6th of 26
    qwen = from_hf_dict(load("qwen2.5-7b"))
    assert qwen.sliding_window is None  # use_sliding_window is false


def test_unknown_model_type_is_a_range_with_a_warning() -> None:
    """An unknown type's count is not one confident number: the real
    Llama count lies in the range, and the estimate is built on its upper end."""
    raw = {**load("llama-2-7b"), "model_type": "my-llama"}
    cfg = from_hf_dict(raw)
    assert cfg.params_range is not None
    lo, hi = cfg.params_range
    assert lo < COUNTS["llama-2-7b"]["num_parameters"] < hi
    assert layout(cfg).params == hi
    assert any("parameters unknown" in w and f"{lo:,}" in w for w in cfg.warnings)


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"num_attention_heads": "32"}, "num_attention_heads"),
        ({"num_key_value_heads": 5}, "num_key_value_heads"),
        ({"hidden_size": -1}, "hidden_size"),
        ({"model_type": None}, "model_type"),
        ({"tie_word_embeddings": "yes"}, "tie_word_embeddings"),
    ],
)
def test_bad_values_name_the_key(change: dict, field: str) -> None:
    raw = {**load("llama-3-8b"), **change}
    with pytest.raises(ConfigError) as err:
        from_hf_dict(raw)
    assert err.value.field == field


def test_unknown_type_without_standard_keys() -> None:
    with pytest.raises(ConfigError, match="unknown model_type 'rwkv'"):
        from_hf_dict({"model_type": "rwkv", "hidden_size": 1024})
