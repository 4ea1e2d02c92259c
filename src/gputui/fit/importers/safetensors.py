"""The JSON header of a .safetensors file: tensor names, dtypes, shapes and byte ranges.

Format (safetensors' documented layout): 8 bytes little-endian u64 N, then N bytes
of JSON {name: {dtype, shape, data_offsets: [begin, end]}, "__metadata__": {...}},
then the raw data. Only the header is read, never the weights, but every entry is
checked against the file: a known dtype, a shape of non-negative integers, offsets
inside the data section, not overlapping, spanning exactly dtype size x elements.
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gputui.core import inputfile

MAX_HEADER = 100 * 2**20  # the reference implementation's own limit
MAX_DEPTH = 3  # {name: {"shape": [..]}}: deeper is not a safetensors header
MAX_RANK = 8
MAX_DIM = 1 << 48

# bits per element of each safetensors dtype
DTYPE_BITS = {
    "F64": 64, "F32": 32, "F16": 16, "BF16": 16, "I64": 64, "I32": 32, "I16": 16, "I8": 8,
    "U64": 64, "U32": 32, "U16": 16, "U8": 8, "BOOL": 8, "F8_E4M3": 8, "F8_E5M2": 8,
    "F8_E8M0": 8, "F6_E2M3": 6, "F6_E3M2": 6, "F4": 4,
}  # fmt: skip


class SafetensorsError(ValueError):
    pass


@dataclass(frozen=True, slots=True)
class TensorInfo:
    name: str
    dtype: str
    shape: tuple[int, ...]
    nbytes: int

    @property
    def elements(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n


def read_header(path: Path) -> list[TensorInfo]:
    """Tensor infos of one file, each checked against the file; SafetensorsError names
    the tensor and the field."""
    with inputfile.open_regular(path) as f:
        try:
            size = inputfile.file_size(f)
            head = f.read(8)
            if len(head) < 8:
                raise SafetensorsError("shorter than the 8-byte header length")
            (n,) = struct.unpack("<Q", head)
            if n > MAX_HEADER or n > size - 8:
                raise SafetensorsError(
                    f"header length {n:,} is implausible (at most {min(MAX_HEADER, size - 8):,}: "
                    f"{MAX_HEADER >> 20} MiB and the file's size; not a safetensors file?)"
                )
            raw = f.read(n)
        except OSError as exc:
            raise SafetensorsError(exc.strerror or str(exc)) from None
    if len(raw) < n:
        raise SafetensorsError("file ends inside its header")
    try:
        text = raw.decode("utf-8")
        header = inputfile.json_value(text, MAX_DEPTH)
    except UnicodeDecodeError:
        raise SafetensorsError("header is not JSON (not UTF-8 text)") from None
    except inputfile.InputError as exc:
        at = f"line {exc.line}: " if exc.line is not None else ""
        raise SafetensorsError(f"header is not JSON ({at}{exc.reason})") from None
    if not isinstance(header, dict):
        raise SafetensorsError("header is not a JSON object")
    return _tensors(header, size - 8 - n)


def _tensors(header: dict[str, Any], data_size: int) -> list[TensorInfo]:
    """The entries of a parsed header; offsets checked against the data section's size."""
    meta = header.get("__metadata__")
    if meta is not None and not (
        isinstance(meta, dict) and all(isinstance(v, str) for v in meta.values())
    ):
        raise SafetensorsError("__metadata__: must be an object of strings")
    out = []
    spans = []
    for name, info in header.items():
        if name == "__metadata__":
            continue
        if not isinstance(info, dict):
            raise SafetensorsError(f"tensor {_short(name)}: entry is not an object")
        dtype = info.get("dtype")
        if not isinstance(dtype, str) or dtype not in DTYPE_BITS:
            raise SafetensorsError(f"tensor {_short(name)}: unknown dtype {_short(dtype)}")
        shape = _shape(name, info.get("shape"))
        begin, end = _offsets(name, info.get("data_offsets"), data_size)
        elements = 1
        for d in shape:
            elements *= d
        bits = elements * DTYPE_BITS[dtype]
        if bits % 8 or end - begin != bits // 8:
            raise SafetensorsError(
                f"tensor {_short(name)}: data_offsets span {end - begin:,} bytes, {dtype} x "
                f"{list(shape)} takes {bits / 8:,g}"
            )
        spans.append((begin, end, name))
        out.append(TensorInfo(name, dtype, shape, end - begin))
    spans.sort()
    for (_, end, first), (begin, _, second) in zip(spans, spans[1:], strict=False):
        if begin < end:
            raise SafetensorsError(
                f"tensor {_short(second)}: data_offsets overlap tensor {_short(first)}'s"
            )
    return out


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _shape(name: str, shape: object) -> tuple[int, ...]:
    if (
        not isinstance(shape, list)
        or len(shape) > MAX_RANK
        or not all(
            isinstance(d, int) and not isinstance(d, bool) and 0 <= d <= MAX_DIM for d in shape
        )
    ):
        raise SafetensorsError(
            f"tensor {_short(name)}: shape {_short(shape)} is not a list of at most {MAX_RANK} "
            f"integers 0 to {MAX_DIM:,}"
        )
    return tuple(shape)


def _offsets(name: str, offsets: object, data_size: int) -> tuple[int, int]:
    if not (
        isinstance(offsets, list)
        and len(offsets) == 2
        and all(isinstance(o, int) and not isinstance(o, bool) for o in offsets)
    ):
        raise SafetensorsError(
            f"tensor {_short(name)}: data_offsets {_short(offsets)} is not [begin, end] integers"
        )
    begin, end = offsets
    if not 0 <= begin <= end <= data_size:
        raise SafetensorsError(
            f"tensor {_short(name)}: data_offsets [{begin}, {end}] outside the data section "
            f"(0 <= begin <= end <= {data_size:,}, its size)"
        )
    return begin, end


def write_header_only(path: Path, tensors: dict[str, tuple[str, tuple[int, ...]]]) -> None:
    """A valid safetensors file of zeros (tests and fixtures; real files come from users)."""
    header: dict[str, object] = {}
    offset = 0
    for name, (dtype, shape) in tensors.items():
        n = 1
        for d in shape:
            n *= d
        size = (n * DTYPE_BITS[dtype] + 7) // 8
        header[name] = {
            "dtype": dtype,
            "shape": list(shape),
            "data_offsets": [offset, offset + size],
        }
        offset += size
    raw = json.dumps(header).encode()
    raw += b" " * (-len(raw) % 8)
    from gputui.core.userfile import replace_file

    replace_file(path, struct.pack("<Q", len(raw)) + raw + bytes(offset), new_mode=0o644)
