"""The task head on an encoder (BERT, RoBERTa, DistilBERT), one table per family.

The config's `architectures` class decides what sits on the encoder:
BertForSequenceClassification adds a classifier to the pooler,
BertForMaskedLM drops the pooler and adds the masked-LM transform and decoder.
Each head is a list of its modules (transformers' name, and a shape rule
from the config), so a count is a sum over the table; scripts/gen_hf_fixtures.py
checks every table against transformers' own models on the meta device.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Literal

from gputui.core.textsafe import visible
from gputui.fit.transformer.bounds import check_int, show
from gputui.fit.transformer.config import ConfigError, EncoderHead, TransformerConfig
from gputui.fit.transformer.hfread import Keys

__all__ = [
    "HeadModule",
    "HEADS",
    "decoder_head_note",
    "encoder_head",
    "head_modules",
    "module_shape",
]

# a decoder is counted with its LM head: what these class names end with
LM_CLASSES = ("ForCausalLM", "LMHeadModel", "ForConditionalGeneration")

Size = Literal["hidden", "labels", "vocab", "one", "two"]
Kind = Literal["linear", "norm", "bias"]
# what a linear shares with the model when tie_word_embeddings is on (the default):
# "weight": the token embedding is its weight; "weight+bias": and the head's own bias
# parameter (BERT's cls.predictions.bias) is its bias
Tied = Literal["", "weight", "weight+bias"]


@dataclass(frozen=True, slots=True)
class HeadModule:
    """One module of a head: a linear (in, out) with a bias, a LayerNorm of `shape[0]` or a
    bias parameter of `shape[0]`; `tied` says what it shares when the embeddings are tied."""

    name: str
    kind: Kind
    shape: tuple[Size, ...]
    tied: Tied = ""


def _lin(name: str, out: Size = "hidden") -> HeadModule:
    return HeadModule(name, "linear", ("hidden", out))


def _norm(name: str) -> HeadModule:
    return HeadModule(name, "norm", ("hidden",))


def _decoder(name: str, tied: Tied) -> HeadModule:
    return HeadModule(name, "linear", ("hidden", "vocab"), tied)


POOLER = (_lin("pooler.dense"),)
BERT_MLM = (
    _lin("cls.predictions.transform.dense"),
    _norm("cls.predictions.transform.LayerNorm"),
    HeadModule("cls.predictions.bias", "bias", ("vocab",)),
    _decoder("cls.predictions.decoder", "weight+bias"),
)
ROBERTA_LM = (
    _lin("lm_head.dense"),
    _norm("lm_head.layer_norm"),
    HeadModule("lm_head.bias", "bias", ("vocab",)),
    _decoder("lm_head.decoder", "weight+bias"),
)
NSP = (_lin("cls.seq_relationship", "two"),)

_BERT: dict[str, tuple[HeadModule, ...]] = {
    "Model": POOLER,
    "ForMaskedLM": BERT_MLM,
    "LMHeadModel": BERT_MLM,
    "ForPreTraining": POOLER + BERT_MLM + NSP,
    "ForNextSentencePrediction": POOLER + NSP,
    "ForSequenceClassification": POOLER + (_lin("classifier", "labels"),),
    "ForMultipleChoice": POOLER + (_lin("classifier", "one"),),
    "ForTokenClassification": (_lin("classifier", "labels"),),
    "ForQuestionAnswering": (_lin("qa_outputs", "labels"),),
}
_ROBERTA: dict[str, tuple[HeadModule, ...]] = {
    "Model": POOLER,
    "ForMaskedLM": ROBERTA_LM,
    "ForCausalLM": ROBERTA_LM,
    "ForSequenceClassification": (
        _lin("classifier.dense"),
        _lin("classifier.out_proj", "labels"),
    ),
    "ForMultipleChoice": POOLER + (_lin("classifier", "one"),),
    "ForTokenClassification": (_lin("classifier", "labels"),),
    "ForQuestionAnswering": (_lin("qa_outputs", "labels"),),
}
_DISTILBERT: dict[str, tuple[HeadModule, ...]] = {
    "Model": (),
    "ForMaskedLM": (
        _lin("vocab_transform"),
        _norm("vocab_layer_norm"),
        _decoder("vocab_projector", "weight"),
    ),
    "ForSequenceClassification": (_lin("pre_classifier"), _lin("classifier", "labels")),
    "ForMultipleChoice": (_lin("pre_classifier"), _lin("classifier", "one")),
    "ForTokenClassification": (_lin("classifier", "labels"),),
    "ForQuestionAnswering": (_lin("qa_outputs", "labels"),),
}
# model_type -> (the class-name prefix, its family's heads by class-name suffix)
HEADS: dict[str, tuple[str, dict[str, tuple[HeadModule, ...]]]] = {
    "bert": ("Bert", _BERT),
    "roberta": ("Roberta", _ROBERTA),
    "xlm-roberta": ("XLMRoberta", _ROBERTA),
    "camembert": ("Camembert", _ROBERTA),
    "distilbert": ("DistilBert", _DISTILBERT),
}


def _num_labels(k: Keys) -> int:
    """transformers' rule: id2label's length when the config has one, else num_labels, else 2."""
    labels = k.raw.get("id2label")
    if labels is not None:
        if not isinstance(labels, Mapping) or not labels:
            raise ConfigError(k._field("id2label"), "must be a non-empty table of labels")
        return check_int(k._field("id2label"), len(labels), "vocab", 1)
    raw = k.raw.get("num_labels")
    if raw is None:
        return 2
    return check_int(k._field("num_labels"), raw, "vocab", 1)


def _architecture(k: Keys) -> str:
    raw = k.raw.get("architectures")
    if raw is None or raw == []:
        return ""
    if not isinstance(raw, list) or not isinstance(raw[0], str):
        raise ConfigError(
            k._field("architectures"), f"must be a list of class names, got {show(raw)}"
        )
    return raw[0]


def encoder_head(k: Keys, cfg: TransformerConfig) -> TransformerConfig:
    """`cfg` with the head its `architectures` class names; an unknown class is not counted
    and says so in a warning."""
    arch = _architecture(k)
    prefix, heads = HEADS.get(cfg.model_type, ("", {}))
    task = "Model"
    warnings = cfg.warnings
    if arch:
        suffix = arch[len(prefix) :] if prefix and arch.startswith(prefix) else None
        if suffix in heads:
            task = suffix
        else:
            task = "unknown"
            name = visible(arch[:80])
            warnings += (
                f"architectures class {name!r} is not known to gputui: its task head is not "
                "counted, only the encoder's layers and embeddings",
            )
    if any(m.shape == ("hidden", "vocab") for m in heads.get(task, ())):
        # fit.transformer.memory models an encoder's forward without any head activations
        warnings += (
            f"{visible(arch[:80])}: its logits over the vocabulary (batch x sequence x "
            f"{cfg.vocab_size:,}) are not in the activation estimate; the peak may be higher",
        )
    head = EncoderHead(arch, task, _num_labels(k), k.flag("tie_word_embeddings", True))
    return replace(cfg, encoder_head=head, warnings=warnings)


def decoder_head_note(k: Keys, cfg: TransformerConfig) -> TransformerConfig:
    """A decoder is counted as its causal LM (an LM head of vocab x width unless tied): a
    class with another head (LlamaForSequenceClassification, a bare Qwen2Model) says so."""
    arch = _architecture(k)
    if not arch or arch.endswith(LM_CLASSES):
        return cfg
    note = (
        f"architectures class {visible(arch[:80])!r}: counted as the causal LM with its LM "
        "head; this class's own head is not modelled"
    )
    return replace(cfg, warnings=cfg.warnings + (note,))


def head_modules(cfg: TransformerConfig) -> tuple[HeadModule, ...]:
    """The modules on `cfg`'s encoder (the bare model's pooler when no class is named)."""
    _, heads = HEADS.get(cfg.model_type, ("", {}))
    head = cfg.encoder_head
    task = "Model" if head is None else head.task
    return heads.get(task, ())


def module_shape(cfg: TransformerConfig, module: HeadModule) -> tuple[int, ...]:
    head = cfg.encoder_head
    sizes = {
        "hidden": cfg.hidden_size,
        "labels": 2 if head is None else head.num_labels,
        "vocab": cfg.vocab_size,
        "one": 1,
        "two": 2,
    }
    return tuple(sizes[s] for s in module.shape)
