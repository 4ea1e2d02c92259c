"""The task head on an encoder (BERT, RoBERTa, DistilBERT, ModernBERT), one table per family.

The config's `architectures` class decides what sits on the encoder:
BertForSequenceClassification adds a classifier to the pooler,
BertForMaskedLM drops the pooler and adds the masked-LM transform and decoder.
Each head is a list of its modules (transformers' name, and a shape rule
from the config), so a count is a sum over the table; scripts/gen_hf_fixtures.py
checks every table against transformers' own models on the meta device.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from gputui.fit.transformer.config import TransformerConfig

__all__ = [
    "HeadModule",
    "HEADS",
    "head_modules",
    "module_shape",
]

# a decoder is counted with its LM head: what these class names end with
LM_CLASSES = ("ForCausalLM", "LMHeadModel", "ForConditionalGeneration")

Size = Literal["hidden", "labels", "vocab", "one", "two"]
# "dense": a linear whose bias the config decides (ModernBERT's classifier_bias)
Kind = Literal["linear", "dense", "norm", "bias"]
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
_MODERNBERT_HEAD = (HeadModule("head.dense", "dense", ("hidden", "hidden")), _norm("head.norm"))
_MODERNBERT: dict[str, tuple[HeadModule, ...]] = {
    "Model": (),
    "ForMaskedLM": _MODERNBERT_HEAD + (_decoder("decoder", "weight"),),
    "ForSequenceClassification": _MODERNBERT_HEAD + (_lin("classifier", "labels"),),
    "ForTokenClassification": _MODERNBERT_HEAD + (_lin("classifier", "labels"),),
    "ForQuestionAnswering": _MODERNBERT_HEAD + (_lin("classifier", "labels"),),
    "ForMultipleChoice": _MODERNBERT_HEAD + (_lin("classifier", "one"),),
}
# model_type -> (the class-name prefix, its family's heads by class-name suffix)
HEADS: dict[str, tuple[str, dict[str, tuple[HeadModule, ...]]]] = {
    "bert": ("Bert", _BERT),
    "roberta": ("Roberta", _ROBERTA),
    "xlm-roberta": ("XLMRoberta", _ROBERTA),
    "camembert": ("Camembert", _ROBERTA),
    "distilbert": ("DistilBert", _DISTILBERT),
    "modernbert": ("ModernBert", _MODERNBERT),
}


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


def vocab_head(cfg: TransformerConfig) -> bool:
    """Whether the encoder's head writes logits over the vocabulary (a masked LM)."""
    return cfg.encoder and any(m.shape == ("hidden", "vocab") for m in head_modules(cfg))
