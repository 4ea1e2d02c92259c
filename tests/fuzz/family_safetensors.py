"""Fuzz family `safetensors`: a small Hugging Face model folder whose safetensors header is
valid or mutated, through `gputui fit FOLDER`.

The folder holds a Llama config.json and one safetensors file written by
`gputui.fit.importers.safetensors.write_header_only` (the fixture writer). Its header
is then parsed back, changed and written again. Faults the generator knows make the
header invalid are "planted" (accepting one is a wrong accept); others (a flipped
byte, a renamed or reordered tensor, padding) are judged only by the CLI's behaviour.
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass, field
from pathlib import Path
from random import Random
from typing import Any

import family_gguf
import generators as gen

FAMILY = "safetensors"
CONFIG = {
    "model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
    "num_key_value_heads": 2, "intermediate_size": 128, "vocab_size": 256,
    "max_position_embeddings": 2048, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
}  # fmt: skip
DTYPES = ["BF16", "F16", "F32", "I8", "U8", "F8_E4M3", "F64"]


@dataclass
class Case:
    data: bytes
    planted: list[str] = field(default_factory=list)


def tensors(rng: Random) -> dict[str, tuple[str, tuple[int, ...]]]:
    dtype = rng.choice(DTYPES)
    out = {
        "model.embed_tokens.weight": (dtype, (256, 64)),
        "lm_head.weight": (dtype, (256, 64)),
        "model.norm.weight": (dtype, (64,)),
    }
    for i in range(2):
        p = f"model.layers.{i}."
        out |= {
            p + "self_attn.q_proj.weight": (dtype, (64, 64)),
            p + "self_attn.k_proj.weight": (dtype, (32, 64)),
            p + "mlp.down_proj.weight": (dtype, (64, 128)),
            p + "input_layernorm.weight": (dtype, (64,)),
        }
    items = list(out.items())
    rng.shuffle(items)
    return dict(items[: rng.randint(1, len(items))])


def _valid_bytes(rng: Random, workdir: Path) -> bytes:
    from gputui.fit.importers.safetensors import write_header_only

    path = workdir / "template.safetensors"
    write_header_only(path, tensors(rng))
    return path.read_bytes()


def split(data: bytes) -> tuple[dict[str, Any], bytes]:
    (n,) = struct.unpack("<Q", data[:8])
    return json.loads(data[8 : 8 + n]), data[8 + n :]


def join(header: dict[str, Any] | str, body: bytes, length: int | None = None) -> bytes:
    raw = (header if isinstance(header, str) else json.dumps(header)).encode()
    return struct.pack("<Q", len(raw) if length is None else length) + raw + body


def _plant(rng: Random, header: dict[str, Any], body: bytes) -> tuple[bytes, str]:
    names = [k for k in header if k != "__metadata__"]
    name = rng.choice(names)
    entry = header[name]
    begin, end = entry["data_offsets"]
    roll = rng.randrange(14)
    if roll == 0:
        entry["dtype"] = rng.choice(["F12", "f16", "", None, 16, ["F16"], "Q4_K"])
        what = "unknown dtype"
    elif roll == 1:
        shape = list(entry["shape"])
        shape[rng.randrange(len(shape))] = rng.choice([-1, -(2**40), True, 1.5, "8", None, [8]])
        entry["shape"] = shape
        what = "a shape that is not non-negative integers"
    elif roll == 2:
        entry["shape"] = rng.choice([None, "64", {"0": 64}, 64])
        what = "a shape that is not a list"
    elif roll == 3:
        entry["data_offsets"] = rng.choice(
            [
                [end, begin - 1],
                [-1, end],
                [begin, True],
                [begin],
                [begin, end, end],
                None,
                [float(begin), end],
            ]
        )
        what = "malformed data_offsets"
    elif roll == 4:
        entry["data_offsets"] = [begin, end + rng.choice([1, 2, 8, 4096])]
        what = "data_offsets span against dtype x shape"
    elif roll == 5:
        shift = len(body) + rng.choice([1, 64, 2**40])
        entry["data_offsets"] = [begin + shift, end + shift]
        what = "data_offsets outside the file"
    elif roll == 6:
        if len(names) < 2:
            entry["data_offsets"] = [begin + len(body) + 8, end + len(body) + 8]
            what = "data_offsets outside the file"
        else:
            other = header[rng.choice([n for n in names if n != name])]
            entry["data_offsets"] = list(other["data_offsets"])
            entry["shape"], entry["dtype"] = list(other["shape"]), other["dtype"]
            what = "overlapping data_offsets"
            if other["data_offsets"][0] == other["data_offsets"][1]:
                what = ""  # two empty ranges do not overlap
    elif roll == 7:
        header["__metadata__"] = rng.choice(
            [{"format": 1}, ["pt"], "pt", {"a": {"b": "c"}}, {"a": None}]
        )
        what = "__metadata__ not an object of strings"
    elif roll == 8:
        depth = rng.choice([4, 50, 5000, 100_000])
        text = json.dumps(header)[:-1] + ', "x": ' + "[" * depth + "]" * depth + "}"
        return join(text, body), "header nested too deeply"
    elif roll == 9:
        text = (
            json.dumps(header)[:-1]
            + ', "x": {"dtype": "F16", "shape": ['
            + "9" * rng.choice([101, 5000])
            + '], "data_offsets": [0, 0]}}'
        )
        return join(text, body), "an integer of too many digits"
    elif roll == 10:
        raw = json.dumps(header).encode()
        return join(
            header, body, rng.choice([len(raw) + len(body) + 1, 2**40, 2**64 - 1])
        ), "header length past the file"
    elif roll == 11:
        cut = rng.randrange(0, max(1, len(body) - 1)) if body else 0
        if not body or all(
            e["data_offsets"][1] <= cut for k, e in header.items() if k != "__metadata__"
        ):
            return join(header, body), ""
        return join(header, body[:cut]), "data cut short"
    elif roll == 12:
        header[name] = rng.choice([None, [], "tensor", 7])
        what = "a tensor entry that is not an object"
    else:
        entry["shape"] = [rng.choice([2**49, 2**60])] + list(entry["shape"])
        what = "a dimension over the bound"
    return join(header, body), what


def make_case(rng: Random) -> Case:
    from tempfile import TemporaryDirectory

    with TemporaryDirectory() as tmp:
        data = _valid_bytes(rng, Path(tmp))
    roll = rng.random()
    if roll < 0.15:
        return Case(data)
    header, body = split(data)
    if roll < 0.8:
        mutated, what = _plant(rng, header, body)
        return Case(mutated, [what] if what else [])
    if roll < 0.9:  # harmless: reorder, rename, pad, metadata of strings
        items = list(header.items())
        rng.shuffle(items)
        header = {("renamed." + k if rng.random() < 0.3 else k): v for k, v in items}
        header["__metadata__"] = {"format": "pt"}
        return Case(join(json.dumps(header) + " " * rng.randrange(16), body))
    raw = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        raw[rng.randrange(len(raw))] = rng.randrange(256)
    return Case(bytes(raw))


def case_text(case: Case) -> bytes:
    return case.data


def run_case(case: Case, workdir: Path) -> gen.Outcome:
    folder = workdir / "model"
    folder.mkdir(exist_ok=True)
    for old in folder.glob("*.safetensors"):
        old.unlink()
    (folder / "config.json").write_text(json.dumps(CONFIG))
    (folder / "model.safetensors").write_bytes(case.data)
    return family_gguf.run_cli(folder, case.planted)
