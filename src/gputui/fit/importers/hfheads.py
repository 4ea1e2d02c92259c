"""An HF config's task head: which head its `architectures` class names (the head table
itself, and what each head costs, is fit.transformer.encoder_heads)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from gputui.core.textsafe import visible
from gputui.fit.importers.hfread import Keys
from gputui.fit.transformer.bounds import check_int, show
from gputui.fit.transformer.config import ConfigError, EncoderHead, TransformerConfig
from gputui.fit.transformer.encoder_heads import HEADS, LM_CLASSES


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
            f"{cfg.vocab_size:,}) are counted in inference, not in training or eval (their "
            "loss); there the peak may be higher",
        )
    head = EncoderHead(
        arch, task, _num_labels(k), k.flag("tie_word_embeddings", True),
        dense_bias=k.flag("classifier_bias", False), decoder_bias=k.flag("decoder_bias", True),
    )  # fmt: skip
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
