"""Weight storage formats and KV-cache dtypes, in the real bytes their layouts take.

Quantized formats store blocks: a few bits per weight plus per-block scales (and
zeros), so their cost is bits per weight *including* that overhead:
  * bitsandbytes nf4/fp4: 4 bits + an fp32 absmax per 64 weights (4.5 bits); with
    double quantization the absmax is itself 8 bits with an fp32 scale per 256
    blocks (4 + 8/64 + 32/(64*256) = 4.127 bits);
  * LLM.int8: 8 bits + an fp32 scale per output row;
  * GPTQ / AWQ int4, group 128: 4 bits + an fp16 scale and a 4-bit zero per group
    of 128 inputs (4 + 16/128 + 4/128 = 4.156 bits); GPTQ also keeps an int32
    g_idx per input row;
  * compressed-tensors (llm-compressor's W4A16, W8A16, ...), named `ct-int{bits}-{scales}`
    with `-asym` and `-gidx` when so: `bits` packed per weight, a 16-bit scale per group
    of `g{N}` inputs, per output row (`channel`) or per tensor, a zero point of `bits`
    per scale when asymmetric, an int32 g_idx per input row with GPTQ's group act-order;
    W4A16 group 128 symmetric is 4 + 16/128 = 4.125 bits;
  * NVFP4: 4 bits + an fp8 scale per 16 weights (4.5 bits), an fp32 scale per tensor;
  * GGUF / llama.cpp types: bytes per block / weights per block from ggml's type
    table (Q4_K 144 bytes per 256 weights = 4.5 bits, Q8_0 34 per 32 = 8.5 bits, ...).
Only the linear layers of the blocks are quantized; embeddings, norms, biases and
(as transformers' quantizers keep it) the LM head stay in 16-bit.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# ggml type id -> (name, weights per block, bytes per block); ggml.h / gguf-py constants
GGML_TYPES: dict[int, tuple[str, int, int]] = {
    0: ("F32", 1, 4),
    1: ("F16", 1, 2),
    2: ("Q4_0", 32, 18),
    3: ("Q4_1", 32, 20),
    6: ("Q5_0", 32, 22),
    7: ("Q5_1", 32, 24),
    8: ("Q8_0", 32, 34),
    9: ("Q8_1", 32, 36),
    10: ("Q2_K", 256, 84),
    11: ("Q3_K", 256, 110),
    12: ("Q4_K", 256, 144),
    13: ("Q5_K", 256, 176),
    14: ("Q6_K", 256, 210),
    15: ("Q8_K", 256, 292),
    16: ("IQ2_XXS", 256, 66),
    17: ("IQ2_XS", 256, 74),
    18: ("IQ3_XXS", 256, 98),
    19: ("IQ1_S", 256, 50),
    20: ("IQ4_NL", 32, 18),
    21: ("IQ3_S", 256, 110),
    22: ("IQ2_S", 256, 82),
    23: ("IQ4_XS", 256, 136),
    24: ("I8", 1, 1),
    25: ("I16", 1, 2),
    26: ("I32", 1, 4),
    27: ("I64", 1, 8),
    28: ("F64", 1, 8),
    29: ("IQ1_M", 256, 56),
    30: ("BF16", 1, 2),
    34: ("TQ1_0", 256, 54),
    35: ("TQ2_0", 256, 66),
    39: ("MXFP4", 32, 17),
}
GGML_BY_NAME = {name.lower(): (block, size) for name, block, size in GGML_TYPES.values()}


def ggml_tensor_bytes(type_id: int, elements: int) -> int:
    """Exact bytes of a GGUF tensor (ggml rounds rows to whole blocks; shapes always divide)."""
    _, block, size = GGML_TYPES[type_id]
    return -(-elements // block) * size


@dataclass(frozen=True, slots=True)
class WeightFormat:
    name: str
    bits: float  # per weight of a quantized linear, overhead included
    per_row_bytes: int = 0  # per output row (LLM.int8's fp32 scale)
    per_input_bytes: int = 0  # per input row (GPTQ's int32 g_idx)
    dense_bytes: int = 2  # embeddings, norms, biases, LM head
    quantized: bool = False
    compute: str = "bf16"  # dtype the matmuls run in
    tensor_key: str = "bf16"  # catalog throughput key for prefill/training speed


def _q(name: str, bits: float, **kw: object) -> WeightFormat:
    return WeightFormat(name, bits, quantized=True, **kw)  # type: ignore[arg-type]


WEIGHT_FORMATS: dict[str, WeightFormat] = {
    "fp32": WeightFormat("fp32", 32, dense_bytes=4, compute="fp32", tensor_key="tf32"),
    "fp16": WeightFormat("fp16", 16, compute="fp16", tensor_key="fp16"),
    "bf16": WeightFormat("bf16", 16),
    "fp8": _q("fp8", 8, tensor_key="fp8"),
    "int8": _q("int8", 8, per_row_bytes=4, compute="fp16", tensor_key="fp16"),
    "nf4": _q("nf4", 4 + 32 / 64),
    "nf4-dq": _q("nf4-dq", 4 + 8 / 64 + 32 / (64 * 256)),
    "fp4": _q("fp4", 4 + 32 / 64),
    "fp4-dq": _q("fp4-dq", 4 + 8 / 64 + 32 / (64 * 256)),
    "gptq-int4": _q(
        "gptq-int4", 4 + 16 / 128 + 4 / 128, per_input_bytes=4, compute="fp16", tensor_key="fp16"
    ),
    "gptq-int8": _q(
        "gptq-int8", 8 + 16 / 128 + 8 / 128, per_input_bytes=4, compute="fp16", tensor_key="fp16"
    ),
    "gptq-int3": _q(
        "gptq-int3", 3 + 16 / 128 + 3 / 128, per_input_bytes=4, compute="fp16", tensor_key="fp16"
    ),
    "gptq-int2": _q(
        "gptq-int2", 2 + 16 / 128 + 2 / 128, per_input_bytes=4, compute="fp16", tensor_key="fp16"
    ),
    "awq-int4": _q("awq-int4", 4 + 16 / 128 + 4 / 128, compute="fp16", tensor_key="fp16"),
    "mxfp4": _q("mxfp4", 4 + 8 / 32),
    "nvfp4": _q("nvfp4", 4 + 8 / 16),
}
# compressed-tensors integer schemes (see the module docstring): scale dtype 16 bit
_COMPRESSED = re.compile(
    r"ct-int([2348])-(?:g([1-9][0-9]{0,6})|(channel)|(tensor))(-asym)?(-gidx)?"
)
COMPRESSED_SCALE_BITS = 16


def compressed_format(name: str) -> WeightFormat | None:
    """The WeightFormat a `ct-int...` name describes, or None when it is not one."""
    m = _COMPRESSED.fullmatch(name)
    if m is None:
        return None
    bits = int(m[1])
    per_scale = COMPRESSED_SCALE_BITS + (bits if m[5] else 0)  # a scale, and a zero point
    g_idx = 4 if m[6] else 0
    if m[2]:
        return _q(name, bits + per_scale / int(m[2]), per_input_bytes=g_idx)
    if m[3]:
        return _q(name, bits, per_row_bytes=-(-per_scale // 8), per_input_bytes=g_idx)
    return _q(name, bits, per_input_bytes=g_idx)  # one scale per tensor: nothing per weight


ALIASES = {
    "gptq": "gptq-int4",
    "awq": "awq-int4",
    "float16": "fp16",
    "bfloat16": "bf16",
    "float32": "fp32",
}
for _name, (_block, _size) in GGML_BY_NAME.items():
    if _block > 1:
        WEIGHT_FORMATS[f"gguf-{_name}"] = _q(f"gguf-{_name}", _size * 8 / _block)


def weight_format(name: str) -> WeightFormat:
    key = ALIASES.get(name.lower(), name.lower())
    if key.startswith("q") or key.startswith("iq") or key.startswith("tq"):
        key = f"gguf-{key}"
    try:
        return WEIGHT_FORMATS[key]
    except KeyError:
        compressed = compressed_format(key)
        if compressed is not None:
            return compressed
        known = ", ".join(n for n in WEIGHT_FORMATS if not n.startswith("gguf-"))
        raise ValueError(
            f"unknown weight format {name!r} (known: {known}, a GGUF type such as q4_k, q8_0, "
            "or a compressed-tensors scheme such as ct-int4-g128)"
        ) from None


# KV-cache element sizes in bits (llama.cpp's q8_0/q4_0 carry an fp16 scale per 32 values)
KV_DTYPES: dict[str, float] = {
    "fp32": 32,
    "fp16": 16,
    "bf16": 16,
    "fp8": 8,
    "int8": 8,
    "q8_0": 34 * 8 / 32,
    "q4_0": 18 * 8 / 32,
}


def kv_bits(name: str) -> float:
    try:
        return KV_DTYPES[name.lower()]
    except KeyError:
        raise ValueError(
            f"unknown KV-cache dtype {name!r} (known: {', '.join(KV_DTYPES)})"
        ) from None
