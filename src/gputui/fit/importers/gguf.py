"""GGUF files (llama.cpp): the header, metadata key/values and tensor infos, never the weights.

Why not the `gguf` package: it is llama.cpp's well-kept reader, but it memory-maps
the file through numpy (a ~30 MB dependency for reading a few kilobytes). The
format is small and documented (ggml's docs/gguf.md), so gputui reads the header
itself, little-endian, versions 2 and 3:

    magic "GGUF", u32 version, u64 tensor_count, u64 metadata_kv_count,
    metadata: (string key, u32 value_type, value)*,
    tensor infos: (string name, u32 n_dims, u64 dims[n_dims], u32 ggml_type, u64 offset)*
    strings are u64 length + UTF-8 bytes; arrays are u32 type + u64 count + values.

Each tensor's bytes follow exactly from its ggml type's block size (formats.GGML_TYPES),
so the weights' size is exact for any mix of types (Q4_K_M is Q4_K with Q6_K parts).
"""

from __future__ import annotations

import struct
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import IO, Any

from gputui.core import inputfile
from gputui.core.errors import UserError
from gputui.core.textsafe import visible
from gputui.fit.importers import gguf_rules
from gputui.fit.importers.gguf_rules import GGUFError, LongString, Skipped
from gputui.fit.importers.gguf_types import GGUFFile, GGUFTensor
from gputui.fit.importers.ggufnames import gguf_message
from gputui.fit.importers.hffamilies import READERS
from gputui.fit.importers.hfkeys import from_hf_dict
from gputui.fit.transformer.config import ConfigError
from gputui.fit.transformer.formats import GGML_TYPES
from gputui.fit.transformer.model import TransformerModel, from_config

MAGIC = b"GGUF"
# value type id -> struct format (8: string, 9: array handled apart)
SCALARS = {
    0: "<B",
    1: "<b",
    2: "<H",
    3: "<h",
    4: "<I",
    5: "<i",
    6: "<f",
    7: "<?",
    10: "<Q",
    11: "<q",
    12: "<d",
}
# Bounds on what a header may make gputui read or keep (checked before reading it).
MAX_STRING = 1 << 26  # one string's bytes
MAX_KEY = 65535  # a metadata key's bytes (the GGUF spec's limit)
MAX_NAME = 63  # a tensor name's bytes (ggml's GGML_MAX_NAME - 1)
MAX_KV = 1 << 16  # metadata entries
MAX_TENSORS = 1 << 16  # tensor infos
MAX_DIMS = 4  # ggml's GGML_MAX_DIMS
MAX_DIM = (1 << 31) - 1  # one tensor dimension
MAX_ARRAY = 1 << 26  # values in one array (also bounded by the bytes left in the file)
MAX_STRINGS = 1 << 22  # strings in all arrays together (token lists, merges)
KEEP_VALUES = 4096  # numeric arrays longer than this are skipped (per-token scores)
KEEP_STRING = 1 << 16  # longer string values are skipped, not decoded
MAX_KEPT = 1 << 24  # bytes of string values kept in all
MAX_ALIGNMENT = 1 << 20
DEFAULT_ALIGNMENT = 32
_CHUNK = 1 << 20
# the fewest bytes one element of a metadata value type takes
_MIN_BYTES = {8: 8, 9: 12} | {t: struct.calcsize(f) for t, f in SCALARS.items()}

# llama.cpp's llama_ftype (general.file_type), for display
FILE_TYPES = {
    0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 7: "Q8_0", 8: "Q5_0", 9: "Q5_1", 10: "Q2_K",
    11: "Q3_K_S", 12: "Q3_K_M", 13: "Q3_K_L", 14: "Q4_K_S", 15: "Q4_K_M", 16: "Q5_K_S",
    17: "Q5_K_M", 18: "Q6_K", 19: "IQ2_XXS", 20: "IQ2_XS", 21: "Q2_K_S", 22: "IQ3_XS",
    23: "IQ3_XXS", 24: "IQ1_S", 25: "IQ4_NL", 26: "IQ3_S", 27: "IQ3_M", 28: "IQ2_S",
    29: "IQ2_M", 30: "IQ4_XS", 31: "IQ1_M", 32: "BF16", 36: "TQ1_0", 37: "TQ2_0", 38: "MXFP4_MOE",
}  # fmt: skip

# GGUF general.architecture -> transformers model_type
ARCHITECTURES = {
    "llama": "llama", "mistral": "llama", "qwen2": "qwen2", "qwen3": "qwen3",
    "qwen2moe": "qwen2_moe", "qwen3moe": "qwen3_moe", "gemma": "gemma", "gemma2": "gemma2",
    "gemma3": "gemma3_text", "phi3": "phi3", "gpt2": "gpt2", "gptneox": "gpt_neox",
    "gptj": "gptj", "olmo": "olmo", "olmo2": "olmo2", "deepseek2": "deepseek_v2",
    "gpt-oss": "gpt_oss",
}  # fmt: skip


class _Reader:
    """Reads a header whose every length and count is checked against the bytes left,
    so nothing is allocated or looped over that the file does not hold."""

    def __init__(self, f: IO[bytes], size: int) -> None:
        self.f = f
        self.size = size
        self.strings = 0  # strings read or skipped in arrays so far
        self.kept = 0  # bytes of string values kept so far

    def left(self) -> int:
        return self.size - self.f.tell()

    def take(self, n: int) -> bytes:
        if n > self.left():
            raise GGUFError("file ends inside its header")
        b = self.f.read(n)
        if len(b) != n:
            raise GGUFError("file ends inside its header")
        return b

    def skip(self, n: int) -> None:
        if n > self.left():
            raise GGUFError("file ends inside its header")
        self.f.seek(n, 1)

    def unpack(self, fmt: str) -> Any:
        return struct.unpack(fmt, self.take(struct.calcsize(fmt)))[0]

    def length(self, what: str, limit: int) -> int:
        n: int = self.unpack("<Q")
        if n > limit:
            raise GGUFError(f"GGUF {what}: {n:,} bytes (at most {limit:,})")
        if n > self.left():
            raise GGUFError(
                f"file ends inside its header (GGUF {what} of {n:,} bytes, {self.left():,} left)"
            )
        return n

    def string(self, what: str = "string", limit: int = MAX_STRING) -> str:
        return self.take(self.length(what, limit)).decode("utf-8", errors="replace")

    def count(self, what: str, n: int, limit: int, each: int) -> int:
        """`n` checked against `limit` and against the bytes left (`each` at least per item)."""
        if n > limit:
            raise GGUFError(f"GGUF {what}: {n:,} entries (at most {limit:,})")
        if n * each > self.left():
            raise GGUFError(
                f"GGUF {what}: {n:,} entries need at least {n * each:,} bytes, "
                f"{self.left():,} are left in the file"
            )
        return n

    def value(self, vtype: int, key: str) -> Any:
        if vtype in SCALARS:
            return self.unpack(SCALARS[vtype])
        if vtype == 8:
            n = self.length(key, MAX_STRING)
            if n > KEEP_STRING:
                self.skip(n)
                return LongString(n)
            self.kept += n
            if self.kept > MAX_KEPT:
                raise GGUFError(f"GGUF {key}: string values over {MAX_KEPT >> 20} MiB in all")
            return self.take(n).decode("utf-8", errors="replace")
        if vtype == 9:
            etype = self.unpack("<I")
            if etype not in _MIN_BYTES or etype == 9:
                raise GGUFError(f"GGUF {key}: unsupported array element type {etype}")
            count = self.count(key, self.unpack("<Q"), MAX_ARRAY, _MIN_BYTES[etype])
            if etype == 8:
                self.strings += count
                if self.strings > MAX_STRINGS:
                    raise GGUFError(
                        f"GGUF {key}: over {MAX_STRINGS:,} strings in the arrays in all"
                    )
                # token lists: skip the strings, keep the count (all the estimate needs)
                self.skip_strings(key, count)
                return Skipped(count, 8)
            size = struct.calcsize(SCALARS[etype])
            if count > KEEP_VALUES:
                self.skip(size * count)
                return Skipped(count, etype)
            raw = self.take(size * count)
            return list(struct.unpack(f"<{count}{SCALARS[etype][1]}", raw))
        raise GGUFError(f"GGUF {key}: unknown metadata value type {vtype}")

    def skip_strings(self, key: str, count: int) -> None:
        """Step over `count` length-prefixed strings, reading the lengths in chunks."""
        buf = b""
        at = 0
        for _ in range(count):
            if at + 8 > len(buf):
                buf = buf[at:] + self.f.read(_CHUNK)
                at = 0
                if len(buf) < 8:
                    raise GGUFError("file ends inside its header")
            (n,) = struct.unpack_from("<Q", buf, at)
            at += 8
            if n > MAX_STRING:
                raise GGUFError(f"GGUF {key}: a string of {n:,} bytes (at most {MAX_STRING:,})")
            if at + n <= len(buf):
                at += n
                continue
            beyond = n - (len(buf) - at)
            if beyond > self.left():
                raise GGUFError("file ends inside its header")
            self.f.seek(beyond, 1)
            buf, at = b"", 0
        self.f.seek(at - len(buf), 1)  # give back what was read ahead


def read_gguf(path: Path) -> GGUFFile:
    """The header of the GGUF file at `path`, every count and offset checked (GGUFError)."""
    with inputfile.open_regular(path) as f:
        try:
            return _read(f, inputfile.file_size(f))
        except OSError as exc:
            raise GGUFError(exc.strerror or str(exc)) from None


def _read(f: IO[bytes], size: int) -> GGUFFile:
    r = _Reader(f, size)
    if r.take(4) != MAGIC:
        raise GGUFError("not a GGUF file (no GGUF magic)")
    version = r.unpack("<I")
    if version not in (2, 3):
        raise GGUFError(f"GGUF version {version} is not supported (2 and 3 are)")
    n_tensors = r.unpack("<Q")
    n_kv = r.count("metadata_kv_count", r.unpack("<Q"), MAX_KV, 8 + 4 + 1)
    meta: dict[str, Any] = {}
    for _ in range(n_kv):
        key = r.string("metadata key", MAX_KEY)
        if key in meta:
            raise GGUFError(f"GGUF {key}: metadata key given twice")
        meta[key] = r.value(r.unpack("<I"), key)
    # each tensor info: name length, n_dims, one dim, type, offset
    r.count("tensor_count", n_tensors, MAX_TENSORS, 8 + 4 + 8 + 4 + 8)
    tensors = []
    offsets = []
    seen: set[str] = set()
    for _ in range(n_tensors):
        name = r.string("tensor name", MAX_NAME)
        if name in seen:
            raise GGUFError(f"GGUF tensor {name}: listed twice")
        seen.add(name)
        tensor = _tensor_info(r, name)
        offsets.append(r.unpack("<Q"))  # into the data section
        tensors.append(tensor)
    alignment = meta.get("general.alignment", DEFAULT_ALIGNMENT)
    if (
        not isinstance(alignment, int)
        or isinstance(alignment, bool)
        or not 0 < alignment <= MAX_ALIGNMENT
        or alignment & (alignment - 1)
    ):
        raise GGUFError(
            f"GGUF general.alignment: {alignment!r} is not a power of two (1 to {MAX_ALIGNMENT:,})"
        )
    data_start = -(-f.tell() // alignment) * alignment
    gguf_rules.check_data(tensors, offsets, alignment, size - data_start)
    return GGUFFile(version, meta, tuple(tensors))


def _tensor_info(r: _Reader, name: str) -> GGUFTensor:
    n_dims = r.unpack("<I")
    if not 1 <= n_dims <= MAX_DIMS:
        raise GGUFError(f"GGUF tensor {name}: {n_dims} dimensions (1 to {MAX_DIMS})")
    dims = tuple(r.unpack("<Q") for _ in range(n_dims))
    for i, d in enumerate(dims):
        if not 1 <= d <= MAX_DIM:
            raise GGUFError(f"GGUF tensor {name}: dims[{i}] is {d:,} (1 to {MAX_DIM:,})")
    type_id = r.unpack("<I")
    if type_id not in GGML_TYPES:
        raise GGUFError(f"GGUF tensor {name}: unknown ggml type {type_id}")
    type_name, block, _ = GGML_TYPES[type_id]
    if dims[0] % block:
        raise GGUFError(
            f"GGUF tensor {name}: rows of {dims[0]:,} values are not a whole number of "
            f"{type_name} blocks ({block})"
        )
    return GGUFTensor(name, dims, type_id)


def _hf_dict(g: GGUFFile) -> tuple[dict[str, Any], list[str]]:
    meta = g.metadata
    arch = meta.get("general.architecture")
    if not isinstance(arch, str):
        raise GGUFError("GGUF general.architecture: missing or not a string")
    warnings = []
    model_type = ARCHITECTURES.get(arch)
    if model_type is None:
        # its metadata becomes Llama-named keys: never one of hffamilies' readers, which
        # read their family's own names (a GGUF "falcon" has no num_kv_heads/multi_query)
        model_type = f"gguf-{arch}" if arch in READERS else arch
        warnings.append(
            f"GGUF architecture {arch!r} is not known: estimated as a Llama-style decoder"
        )

    gguf_rules.check_model(g, arch, known=arch in ARCHITECTURES)
    blocks = gguf_rules.integer(meta, f"{arch}.block_count")

    def get(key: str) -> Any:
        # per-layer values (some files): the widest layer
        return gguf_rules.integer(meta, f"{arch}.{key}", blocks)

    names = {t.name: t for t in g.tensors}
    vocab = gguf_rules.vocab_size(g, arch)
    if vocab is None and "token_embd.weight" in names:
        vocab = names["token_embd.weight"].dims[-1]
    raw: dict[str, Any] = {
        "model_type": model_type,
        "hidden_size": get("embedding_length"),
        "num_hidden_layers": get("block_count"),
        "num_attention_heads": get("attention.head_count"),
        "num_key_value_heads": get("attention.head_count_kv") or get("attention.head_count"),
        "intermediate_size": get("feed_forward_length"),
        "vocab_size": vocab,
        "max_position_embeddings": get("context_length"),
        "tie_word_embeddings": "output.weight" not in names,
    }
    if get("attention.key_length") and model_type not in ("deepseek_v2",):
        raw["head_dim"] = get("attention.key_length")
    if get("attention.sliding_window"):
        raw["sliding_window"] = get("attention.sliding_window")
    experts = get("expert_count")
    if experts:
        raw["num_local_experts"] = raw["num_experts"] = raw["n_routed_experts"] = experts
        raw["num_experts_per_tok"] = get("expert_used_count")
        raw["moe_intermediate_size"] = get("expert_feed_forward_length") or get(
            "feed_forward_length"
        )
        if model_type == "llama":
            raw["model_type"] = "mixtral"
        if get("expert_shared_feed_forward_length"):
            raw["shared_expert_intermediate_size"] = get("expert_shared_feed_forward_length")
    if model_type == "deepseek_v2":
        raw.update(
            q_lora_rank=get("attention.q_lora_rank") or None,
            kv_lora_rank=get("attention.kv_lora_rank"),
            qk_rope_head_dim=get("rope.dimension_count"),
            qk_nope_head_dim=(get("attention.key_length") or 0)
            - (get("rope.dimension_count") or 0),
            v_head_dim=get("attention.value_length"),
            first_k_dense_replace=get("leading_dense_block_count") or 0,
            n_shared_experts=get("expert_shared_count") or 0,
        )
    if model_type in ("gpt2", "gptj"):
        raw.update(
            n_embd=raw["hidden_size"],
            n_layer=raw["num_hidden_layers"],
            n_head=raw["num_attention_heads"],
        )
        raw["n_positions"] = raw["max_position_embeddings"]
        raw["n_inner"] = raw["intermediate_size"]
    gguf_keys = {
        "hidden_size": "embedding_length",
        "num_hidden_layers": "block_count",
        "num_attention_heads": "attention.head_count",
        "vocab_size": "vocab_size",
    }
    missing = [key for hf, key in gguf_keys.items() if raw.get(hf) is None]
    if missing:
        raise GGUFError(f"GGUF {arch}.{missing[0]}: missing")
    return {k: v for k, v in raw.items() if v is not None}, warnings


def dominant_type(g: GGUFFile) -> str:
    """The ggml type holding most of the weights (the quantization people name a file by)."""
    by: Counter[int] = Counter()
    for t in g.tensors:
        if len(t.dims) >= 2:
            by[t.type_id] += t.elements
    return GGML_TYPES[by.most_common(1)[0][0]][0] if by else "F32"


def load_gguf(path: Path) -> TransformerModel:
    where = visible(str(path))
    try:
        g = read_gguf(path)
        raw, warnings = _hf_dict(g)
    except GGUFError as exc:
        raise UserError(f"{where}: {visible(str(exc))}") from None
    try:
        cfg = from_hf_dict(raw)
    except ConfigError as exc:
        arch = g.metadata.get("general.architecture")
        line = gguf_message(exc, arch) if isinstance(arch, str) else str(exc)
        raise UserError(f"{where}: metadata: {visible(line)}") from None
    name = meta_name if isinstance(meta_name := g.metadata.get("general.name"), str) else path.stem
    model = from_config(cfg, visible(name), str(path), "gguf")
    params = sum(t.elements for t in g.tensors)
    stored = sum(t.nbytes for t in g.tensors)
    types: Counter[str] = Counter()
    for t in g.tensors:
        types[GGML_TYPES[t.type_id][0]] += t.elements
    main = dominant_type(g)
    fmt = main.lower() if main in ("F32", "F16", "BF16") else f"gguf-{main.lower()}"
    fmt = {"f32": "fp32", "f16": "fp16"}.get(fmt, fmt)
    ftype = g.metadata.get("general.file_type")
    if isinstance(ftype, int) and ftype in FILE_TYPES:
        warnings.append(f"GGUF file type {FILE_TYPES[ftype]}")
    # the config's model, now with what the checkpoint itself says
    return replace(
        model,
        source=str(path),
        kind="gguf",
        exact_params=params,
        stored_bytes=stored,
        stored_format=fmt,
        stored_dtypes=dict(types),
        warnings=model.warnings + tuple(warnings),
    )


def is_gguf(path: Path) -> bool:
    try:
        with inputfile.open_regular(path) as f:
            return f.read(4) == MAGIC
    except (OSError, UserError):
        return False
