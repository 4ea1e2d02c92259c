"""What a GGUF file must hold to be a model at all: the rules between its tensor table,
its data section and its metadata.

The reader (gguf.py) bounds each value as it reads it; these rules relate values:
tensor data inside the file, aligned and not overlapping; `token_embd` of shape
(embedding_length, vocab); every block 0..block_count-1 present, none beyond,
with the tensors every block of a known architecture has; experts used within
experts; kv heads dividing heads. llama.cpp refuses such files too (mostly with
an assertion), so none of this refuses a model it would load. A broken rule is
a GGUFError `GGUF <field or tensor>: reason (bound)`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gputui.fit.transformer.formats import ggml_tensor_bytes

if TYPE_CHECKING:
    from gputui.fit.importers.gguf_types import GGUFFile, GGUFTensor

_BLOCK = re.compile(r"blk\.(0|[1-9][0-9]{0,8})\.(.+)")
# architectures whose blocks are all attention + feed-forward (gguf.ARCHITECTURES' keys)
_MLA = ("deepseek2",)


class GGUFError(ValueError):
    pass


@dataclass(frozen=True, slots=True)
class Skipped:
    """An array the reader stepped over: its length (all the estimate needs) and type."""

    count: int
    etype: int  # GGUF value type of the elements (8: string)

    def __len__(self) -> int:
        return self.count


@dataclass(frozen=True, slots=True)
class LongString:
    """A string value too long to be worth decoding (nothing gputui reads is that long)."""

    nbytes: int


def check_data(
    tensors: Sequence[GGUFTensor], offsets: Sequence[int], alignment: int, data_size: int
) -> None:
    """Each tensor's bytes aligned, inside the data section, and not overlapping another's."""
    spans = []
    for t, begin in zip(tensors, offsets, strict=True):
        if begin % alignment:
            raise GGUFError(
                f"GGUF tensor {t.name}: data offset {begin:,} is not a multiple of {alignment}"
            )
        end = begin + ggml_tensor_bytes(t.type_id, t.elements)
        if end > data_size:
            raise GGUFError(
                f"GGUF tensor {t.name}: data ends at byte {end:,} of the data section, which "
                f"holds {max(data_size, 0):,} (a truncated file?)"
            )
        spans.append((begin, end, t.name))
    spans.sort()
    for (_, end, name), (begin, _, other) in zip(spans, spans[1:], strict=False):
        if begin < end:
            raise GGUFError(f"GGUF tensor {other}: data overlaps tensor {name}'s")


def integer(meta: Mapping[str, Any], key: str, blocks: int | None = None) -> int | None:
    """A metadata integer (the largest, for a per-layer array of `blocks` values), or None."""
    value = meta.get(key)
    if value is None:
        return None
    if isinstance(value, list):
        if not value or any(isinstance(v, bool) or not isinstance(v, int) for v in value):
            raise GGUFError(f"GGUF {key}: must be an integer or a list of integers")
        if blocks is not None and len(value) != blocks:
            raise GGUFError(f"GGUF {key}: {len(value)} per-layer values for {blocks} blocks")
        value = max(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise GGUFError(f"GGUF {key}: must be an integer, got {_kind(value)}")
    if value < 0:
        raise GGUFError(f"GGUF {key}: must be >= 0, got {value}")
    return value


def _kind(value: object) -> str:
    if isinstance(value, (Skipped, list)):
        return "an array"
    if isinstance(value, (LongString, str)):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    return "a float" if isinstance(value, float) else type(value).__name__


def vocab_size(g: GGUFFile, arch: str) -> int | None:
    """The vocabulary: the tokenizer's token count, else {arch}.vocab_size."""
    tokens = g.metadata.get("tokenizer.ggml.tokens")
    if tokens is not None:
        if not (isinstance(tokens, Skipped) and tokens.etype == 8):
            raise GGUFError("GGUF tokenizer.ggml.tokens: must be an array of strings")
        return tokens.count
    return integer(g.metadata, f"{arch}.vocab_size")


def check_model(g: GGUFFile, arch: str, known: bool) -> None:
    """The tensor table against the metadata (`known`: an architecture gputui maps)."""
    meta = g.metadata
    names = {t.name: t for t in g.tensors}
    blocks = integer(meta, f"{arch}.block_count")
    if blocks is None:
        raise GGUFError(f"GGUF {arch}.block_count: missing")
    if not 1 <= blocks <= len(g.tensors):
        raise GGUFError(
            f"GGUF {arch}.block_count: {blocks:,} blocks, the file has {len(g.tensors):,} "
            "tensors (1 to that many)"
        )
    _check_blocks(g.tensors, blocks, arch, known)
    embd = integer(meta, f"{arch}.embedding_length", blocks)
    if embd is None or embd < 1:
        raise GGUFError(f"GGUF {arch}.embedding_length: missing or 0")
    vocab = vocab_size(g, arch)
    token_embd = names.get("token_embd.weight")
    if token_embd is None:
        if known:
            raise GGUFError("GGUF tensor token_embd.weight: missing")
    else:
        want = (embd, vocab if vocab is not None else token_embd.dims[-1])
        if token_embd.dims != want:
            raise GGUFError(
                f"GGUF tensor token_embd.weight: shape {list(token_embd.dims)}, the metadata "
                f"says [{want[0]}, {want[1]}] (embedding_length, vocab)"
            )
        output = names.get("output.weight")
        if output is not None and output.dims != want:
            raise GGUFError(
                f"GGUF tensor output.weight: shape {list(output.dims)}, the metadata says "
                f"[{want[0]}, {want[1]}] (embedding_length, vocab)"
            )
    _check_heads_and_experts(meta, arch, blocks)


def _check_heads_and_experts(meta: Mapping[str, Any], arch: str, blocks: int) -> None:
    heads = integer(meta, f"{arch}.attention.head_count", blocks)
    kv = integer(meta, f"{arch}.attention.head_count_kv", blocks)
    if heads is not None and kv is not None and (kv < 1 or heads < 1 or heads % kv):
        raise GGUFError(
            f"GGUF {arch}.attention.head_count_kv: {kv} does not divide "
            f"{arch}.attention.head_count {heads}"
        )
    experts = integer(meta, f"{arch}.expert_count", blocks) or 0
    used = integer(meta, f"{arch}.expert_used_count", blocks) or 0
    if used > experts:
        raise GGUFError(
            f"GGUF {arch}.expert_used_count: {used} experts per token, more than "
            f"{arch}.expert_count {experts}"
        )


def _check_blocks(tensors: Sequence[GGUFTensor], blocks: int, arch: str, known: bool) -> None:
    """blk.N.* for exactly the N in range(blocks); a known architecture's per-block tensors."""
    parts: list[set[str]] = [set() for _ in range(blocks)]
    for t in tensors:
        if not t.name.startswith("blk."):
            continue
        m = _BLOCK.fullmatch(t.name)
        if m is None:
            raise GGUFError(f"GGUF tensor {t.name}: not blk.N.NAME with a block number N")
        n = int(m.group(1))
        if n >= blocks:
            raise GGUFError(
                f"GGUF tensor {t.name}: block {n}, but {arch}.block_count is {blocks} "
                f"(blocks 0 to {blocks - 1})"
            )
        parts[n].add(m.group(2))
    for n, have in enumerate(parts):
        if not have:
            raise GGUFError(f"GGUF tensor blk.{n}.*: block {n} has no tensors ({blocks} blocks)")
        if known:
            missing = _missing(have, arch)
            if missing:
                raise GGUFError(f"GGUF tensor blk.{n}.{missing}: missing (every block has one)")


def _missing(have: set[str], arch: str) -> str | None:
    """The first tensor an attention + feed-forward block lacks, or None."""
    if "attn_output.weight" not in have:
        return "attn_output.weight"
    if not have & {"attn_q.weight", "attn_qkv.weight", "attn_q_a.weight"}:
        return "attn_q.weight"
    if "attn_q.weight" in have and arch not in _MLA:
        for part in ("attn_k.weight", "attn_v.weight"):
            if part not in have:
                return part
    if any(p.startswith("ffn_down.") and p[9:10].isdigit() for p in have):
        if "ffn_gate_inp.weight" not in have:  # experts stored one tensor each (older files)
            return "ffn_gate_inp.weight"
    elif "ffn_down_exps.weight" in have:
        for part in ("ffn_up_exps.weight", "ffn_gate_inp.weight"):
            if part not in have:
                return part
    elif "ffn_down.weight" in have:
        if "ffn_up.weight" not in have:
            return "ffn_up.weight"
    else:
        return "ffn_down.weight"
    return None
