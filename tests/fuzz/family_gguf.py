"""Fuzz family `gguf`: small llama-style GGUF files, valid or mutated, through `gputui fit`.

A case is a structurally valid file (metadata + tensor table + zeroed data, written
by tests/fixtures/gguf/make_tiny_gguf.py) with zero or more faults. A fault the
generator knows makes the file invalid is "planted": accepting such a file is a
wrong accept. Other faults (a flipped byte, junk appended) may or may not break
the file; for those only the CLI's behaviour is judged (exit 0/1 with output, or 2
and one line; no traceback, hang or control character).
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import struct
from dataclasses import dataclass, field
from pathlib import Path
from random import Random
from typing import Any

import generators as gen

FAMILY = "gguf"
REPO = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location(
    "make_tiny_gguf", REPO / "tests/fixtures/gguf/make_tiny_gguf.py"
)
assert _spec and _spec.loader
mk: Any = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(mk)

Tensors = list[tuple[str, tuple[int, ...], Any]]


@dataclass
class Case:
    data: bytes
    planted: list[str] = field(default_factory=list)


def model(rng: Random) -> tuple[dict[str, Any], Tensors]:
    """A random small, valid llama-style (or Mixtral-style) model."""
    quant = rng.choice(["Q8_0", "Q4_0", "F16", "F32", "Q4_K", "Q6_K"])
    block = 256 if quant in ("Q4_K", "Q6_K") else 32
    kv = rng.choice([1, 2, 4])
    heads = kv * rng.choice([1, 2, 4])
    h = block * rng.randint(1, 2) * (2 if heads > 4 else 1)
    experts = rng.choice([0, 0, 0, 2, 4])
    meta, tensors = mk.tiny_llama(
        quant,
        h=h,
        layers=rng.randint(1, 3),
        heads=heads,
        kv=kv,
        ffn=block * rng.randint(1, 3),
        vocab=rng.choice([32, 100, 256, 300]),
        experts=experts,
        used=rng.randint(1, experts) if experts else 0,
    )
    if rng.random() < 0.3:
        tensors = [t for t in tensors if t[0] != "output.weight"]  # tied embeddings
    return meta, list(tensors)


def _blocks(tensors: Tensors) -> int:
    found = [int(n.split(".")[1]) for n, _, _ in tensors if n.startswith("blk.")]
    return 1 + max(found) if found else 1  # a previous fault may have removed every block


FAULTS = 20


def _structural(
    rng: Random, roll: int, meta: dict[str, Any], tensors: Tensors, kw: dict[str, Any]
) -> str:
    """Plant fault number `roll`, one that makes the file invalid; return what it was."""
    arch = "llama"
    blocks = _blocks(tensors)
    if roll == 0:
        meta["tokenizer.ggml.scores"] = struct.pack("<IIQ", 9, 6, rng.choice([2**32, 2**25, 10**6]))
        return "array count past the end"
    if roll == 1:
        meta["general.name"] = struct.pack("<IQ", 8, rng.choice([2**40, 2**26, 10**7]))
        return "string length past the end"
    if roll == 2:
        kw[rng.choice(["n_tensors", "n_kv"])] = rng.choice(
            [2**32, 2**20, len(tensors) + len(meta) + 1]
        )
        return "tensor or metadata count too large"
    if roll == 3:
        meta[f"{arch}.block_count"] = rng.choice([0, blocks + 1, 2**31, 2**32 - 1])
        return "block_count against the tensors"
    if roll == 4:
        meta[f"{arch}.embedding_length"] = meta[f"{arch}.embedding_length"] + rng.choice(
            [-1, 1, 32]
        )
        return "embedding_length against token_embd"
    if roll == 5:
        meta["tokenizer.ggml.tokens"] = [f"t{i}" for i in range(rng.choice([0, 1, 31, 1000]))]
        return "vocab against token_embd"
    if roll == 6:
        t = rng.choice(tensors)
        tensors.insert(rng.randrange(len(tensors) + 1), t)
        return f"tensor {t[0]} twice"
    if roll == 7:
        i = rng.randrange(blocks)
        part = rng.choice(
            [
                "attn_output",
                "attn_q",
                "attn_k",
                "attn_v",
                "ffn_down",
                "ffn_up",
                "ffn_down_exps",
                "ffn_up_exps",
                "ffn_gate_inp",
            ]
        )
        before = len(tensors)
        tensors[:] = [t for t in tensors if t[0] != f"blk.{i}.{part}.weight"]
        if len(tensors) == before:
            tensors[:] = [t for t in tensors if not t[0].startswith(f"blk.{i}.")]
            return f"block {i} removed"
        return f"blk.{i}.{part} missing"
    if roll == 8:
        tensors.append((f"blk.{blocks + rng.choice([0, 5, 10**6])}.attn_norm.weight", (8,), "F32"))
        return "a block past block_count"
    if roll == 9:
        i = rng.choice([k for k, t in enumerate(tensors) if t[2] not in ("F32", "F16")] or [0])
        name, dims, q = tensors[i]
        if q in ("F32", "F16"):
            q = "Q8_0"
        tensors[i] = (name, (dims[0] + rng.choice([1, 3, 16]),) + dims[1:], q)
        return "quantized rows not whole blocks"
    if roll == 10:
        i = rng.randrange(len(tensors))
        name, dims, q = tensors[i]
        dims = list(dims)
        dims[rng.randrange(len(dims))] = rng.choice([0, 2**31, 2**40, 2**64 - 1])
        tensors[i] = (name, tuple(dims), q)
        kw["data_bytes"] = 1 << 16
        return "a zero or huge dimension"
    if roll == 11:
        kw["data_bytes"] = rng.randrange(0, 64)
        return "data section cut short"
    if roll == 12:
        offsets = _offsets(tensors)
        i = rng.randrange(len(offsets))
        offsets[i] = (offsets[i] + rng.choice([1, 7, 16])) % 2**64
        kw["offsets"] = offsets
        return "misaligned data offset"
    if roll == 13:
        offsets = _offsets(tensors)
        if len(offsets) > 1:
            i = rng.randrange(1, len(offsets))
            offsets[i] = offsets[i - 1]
        else:
            offsets[0] = 1 << 40
        kw["offsets"] = offsets
        return "overlapping or outside data offsets"
    if roll == 14:
        meta[f"{arch}.expert_count"] = meta.get(f"{arch}.expert_count", 0)
        meta[f"{arch}.expert_used_count"] = meta[f"{arch}.expert_count"] + rng.choice([1, 8])
        return "expert_used_count over expert_count"
    if roll == 15:
        heads = meta[f"{arch}.attention.head_count"]
        meta[f"{arch}.attention.head_count_kv"] = rng.choice([0, heads + 1, 3 if heads % 3 else 5])
        return "head_count_kv not dividing head_count"
    if roll == 16:
        i = rng.randrange(len(tensors))
        tensors[i] = (tensors[i][0], tensors[i][1], rng.choice([4, 5, 31, 99, 2**32 - 1]))
        return "unknown ggml type"
    if roll == 17:
        meta["general.alignment"] = rng.choice([0, 3, 48, 2**31])
        return "alignment not a power of two"
    if roll == 18:
        meta["general.architecture"] = rng.choice([7, b"\x06\x00\x00\x00\x00\x00\x80\x3f"])
        return "architecture not a string"
    meta[rng.choice(list(meta))] = struct.pack("<I", rng.choice([13, 99, 2**31]))
    return "unknown metadata value type"


def _offsets(tensors: Tensors) -> list[int]:
    out, offset = [], 0
    for _, dims, q in tensors:
        _, block, size = mk.GGML.get(q, (0, 1, 1)) if isinstance(q, str) else (0, 1, 1)
        n = 1
        for d in dims:
            n *= d
        nbytes = -(-n // block) * size
        out.append(offset % 2**64)  # a huge planted dimension makes later offsets wrap
        offset += nbytes + (-nbytes % 32)
    return out


def _unplanted(rng: Random, data: bytes) -> bytes:
    """Faults that may or may not break the file."""
    raw = bytearray(data)
    roll = rng.random()
    if roll < 0.5:
        for _ in range(rng.randint(1, 6)):
            i = rng.randrange(len(raw))
            raw[i] = rng.randrange(256)
    elif roll < 0.7:
        raw += bytes(rng.randrange(256) for _ in range(rng.randint(1, 64)))
    elif roll < 0.85:
        i = rng.randrange(len(raw) - 8)
        raw[i : i + 8] = struct.pack("<Q", rng.choice([0, 1, 2**31, 2**32, 2**63, 2**64 - 1]))
    else:
        i = rng.randrange(len(raw) - 4)
        raw[i : i + 4] = struct.pack("<I", rng.choice([0, 9, 12, 2**31, 2**32 - 1]))
    return bytes(raw)


def make_case(rng: Random) -> Case:
    meta, tensors = model(rng)
    roll = rng.random()
    planted: list[str] = []
    kw: dict[str, Any] = {}
    if roll < 0.15:
        return Case(mk.gguf_bytes(meta, tensors))
    if roll < 0.75:
        # distinct faults, none undoing another; in order, so offsets are planted last
        for fault in sorted(rng.sample(range(FAULTS), rng.choice([1, 1, 1, 2]))):
            planted.append(_structural(rng, fault, meta, tensors, kw))
        return Case(mk.gguf_bytes(meta, tensors, **kw), planted)
    data = mk.gguf_bytes(meta, tensors)
    if roll < 0.85:
        cut = rng.randrange(0, len(data) - 40)
        return Case(data[:cut], [f"truncated at {cut} of {len(data)}"])
    return Case(_unplanted(rng, data))


def case_text(case: Case) -> bytes:
    return case.data


def run_case(case: Case, workdir: Path) -> gen.Outcome:
    path = workdir / "model.gguf"
    path.write_bytes(case.data)
    return run_cli(path, case.planted)


def run_cli(path: Path, planted: list[str]) -> gen.Outcome:
    """`gputui fit PATH --gpu "RTX 3090"` in process, judged as the family's property says."""
    from gputui.cli import main
    from gputui.core.textsafe import is_visible

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["fit", str(path), "--gpu", "RTX 3090"])
    text = out.getvalue() + err.getvalue()
    if not all(is_visible(line) for line in text.splitlines()):
        return gen.Outcome("wrong-accept", f"control character in the output | {text[:80]!r}")
    if code == 2:
        lines = err.getvalue().splitlines()
        if len(lines) != 1 or out.getvalue():
            return gen.Outcome(
                "wrong-accept", f"rejection is not one line | {err.getvalue()[:80]!r}"
            )
        return gen.Outcome("rejected", lines[0])
    if code not in (0, 1):
        return gen.Outcome("wrong-accept", f"exit {code} | {err.getvalue()[:80]!r}")
    if planted:
        return gen.Outcome("wrong-accept", f"accepted {planted[0]} | {planted}")
    if not out.getvalue().strip():
        return gen.Outcome("wrong-accept", "exit 0/1 without output | ")
    return gen.OK
