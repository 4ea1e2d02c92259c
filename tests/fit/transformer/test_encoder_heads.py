"""An encoder is counted with the head its `architectures` class puts on it.

Counts are transformers' own (the class built on the meta device by
scripts/gen_hf_fixtures.py --extra, stored in tests/fixtures/hf/extra_counts.json).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gputui.fit.importers.hfkeys import from_hf_dict
from gputui.fit.transformer.config import ConfigError
from gputui.fit.transformer.layout import layout

ROOT = Path(__file__).resolve().parents[3]
EXTRA = json.loads((ROOT / "tests/fixtures/hf/extra_counts.json").read_text())
BASE = json.loads((ROOT / "tests/fixtures/hf/param_counts.json").read_text())
ENCODERS = sorted(
    k for k, v in EXTRA.items() if not k.startswith("_") and "text_config" not in v["config"]
)


def bare(name: str) -> dict:
    return json.loads((ROOT / "examples/llm" / f"{name}.json").read_text())


@pytest.mark.parametrize("name", ENCODERS)
def test_head_counts_equal_transformers(name: str) -> None:
    entry = EXTRA[name]
    cfg = from_hf_dict(entry["config"])
    assert entry["class"] == entry["config"]["architectures"][0]
    assert layout(cfg).params == entry["num_parameters"]
    if any(t in entry["class"] for t in ("MaskedLM", "LMHead", "PreTraining", "CausalLM")):
        # the vocabulary-wide logits are not modelled: said, not silently left out
        (warning,) = cfg.warnings
        assert "logits over the vocabulary" in warning and "counted in inference" in warning
    else:
        assert cfg.warnings == ()


def test_the_fixtures_cover_every_head_kind() -> None:
    classes = {EXTRA[n]["class"] for n in ENCODERS}
    for family in ("Bert", "Roberta", "DistilBert"):
        for task in ("MaskedLM", "SequenceClassification", "TokenClassification"):
            assert f"{family}For{task}" in classes
        assert f"{family}ForQuestionAnswering" in classes


def test_masked_lm_is_not_the_bare_encoder() -> None:
    """BertForMaskedLM drops the pooler and adds the transform, its LayerNorm and the
    decoder's bias (the decoder's weight is the token embedding)."""
    h, vocab = 768, 30522
    mlm = layout(from_hf_dict(EXTRA["bert-base-uncased-mlm"]["config"])).params
    bert_model = BASE["bert-base-uncased"]["num_parameters"]
    assert mlm - bert_model == (h * h + h) + 2 * h + vocab - (h * h + h)


def test_classifier_labels_from_id2label_then_num_labels() -> None:
    raw = {**bare("bert-base-uncased"), "architectures": ["BertForSequenceClassification"]}
    two = layout(from_hf_dict(raw)).params
    five = layout(from_hf_dict({**raw, "num_labels": 5})).params
    assert five - two == 3 * (768 + 1)
    labels = {str(i): f"L{i}" for i in range(4)}
    # id2label decides where both are given, as in transformers
    four = layout(from_hf_dict({**raw, "num_labels": 5, "id2label": labels})).params
    assert four - two == 2 * (768 + 1)


def test_unknown_architecture_says_its_head_is_not_counted() -> None:
    raw = {**bare("bert-base-uncased"), "architectures": ["BertForSpanMagic\x1b[31m"]}
    cfg = from_hf_dict(raw)
    (warning,) = cfg.warnings
    assert "BertForSpanMagic" in warning and "not counted" in warning
    assert "\x1b" not in warning
    # the encoder alone: BertModel without its pooler
    assert layout(cfg).params == BASE["bert-base-uncased"]["num_parameters"] - (768 * 768 + 768)


def test_another_familys_class_is_unknown() -> None:
    raw = {**bare("roberta-base"), "architectures": ["BertForMaskedLM"]}
    assert any("BertForMaskedLM" in w for w in from_hf_dict(raw).warnings)


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"architectures": "BertForMaskedLM"}, "architectures"),
        ({"architectures": [7]}, "architectures"),
        ({"num_labels": 0}, "num_labels"),
        ({"num_labels": 10**40}, "num_labels"),
        ({"id2label": ["a", "b"]}, "id2label"),
        ({"tie_word_embeddings": "no"}, "tie_word_embeddings"),
    ],
)
def test_bad_head_keys_name_the_key(change: dict, field: str) -> None:
    raw = {**bare("bert-base-uncased"), "architectures": ["BertForSequenceClassification"]}
    with pytest.raises(ConfigError) as err:
        from_hf_dict({**raw, **change})
    assert err.value.field == field


@pytest.mark.parametrize("name", ENCODERS)
def test_head_counts_equal_live_transformers(name: str) -> None:
    """Where torch and transformers are importable: the class itself, on the meta device."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    raw = EXTRA[name]["config"]
    kwargs = {k: v for k, v in raw.items() if k not in ("model_type", "torch_dtype")}
    cfg = transformers.AutoConfig.for_model(raw["model_type"], **kwargs)
    with torch.device("meta"):
        model = getattr(transformers, raw["architectures"][0])(cfg)
    assert layout(from_hf_dict(raw)).params == model.num_parameters()


@pytest.mark.parametrize(
    ("arch", "noted"),
    [
        ("LlamaForCausalLM", False),
        ("LlamaForSequenceClassification", True),
        ("LlamaModel", True),
        ("Gemma3ForConditionalGeneration", False),
    ],
)
def test_a_decoder_with_another_head_says_so(arch: str, noted: bool) -> None:
    raw = {**bare("llama-3-8b"), "architectures": [arch]}
    cfg = from_hf_dict(raw)
    assert any(arch in w and "not modelled" in w for w in cfg.warnings) == noted
    assert layout(cfg).params == BASE["llama-3-8b"]["num_parameters"]
