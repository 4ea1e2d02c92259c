"""The JSON header of a .safetensors file: tensor names, dtypes, shapes and byte ranges.

Format (safetensors' documented layout): 8 bytes little-endian u64 N, then N bytes
of JSON {name: {dtype, shape, data_offsets: [begin, end]}, "__metadata__": {...}},
then the raw data. Only the header is read, never the weights.
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass
from pathlib import Path

MAX_HEADER = 100 * 2**20  # the reference implementation's own limit

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
    """Tensor infos of one file; SafetensorsError names what is wrong."""
    try:
        with path.open("rb") as f:
            head = f.read(8)
            if len(head) < 8:
                raise SafetensorsError("shorter than the 8-byte header length")
            (n,) = struct.unpack("<Q", head)
            if n > MAX_HEADER:
                raise SafetensorsError(
                    f"header length {n} is implausible (not a safetensors file?)"
                )
            raw = f.read(n)
    except OSError as exc:
        raise SafetensorsError(exc.strerror or str(exc)) from None
    if len(raw) < n:
        raise SafetensorsError("file ends inside its header")
    try:
        header = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SafetensorsError(f"header is not JSON ({exc})") from None
    if not isinstance(header, dict):
        raise SafetensorsError("header is not a JSON object")
    out = []
    for name, info in header.items():
        if name == "__metadata__":
            continue
        if not isinstance(info, dict):
            raise SafetensorsError(f"tensor {name!r}: entry is not an object")
        dtype = info.get("dtype")
        shape = info.get("shape")
        offsets = info.get("data_offsets")
        if dtype not in DTYPE_BITS:
            raise SafetensorsError(f"tensor {name!r}: unknown dtype {dtype!r}")
        if not isinstance(shape, list) or not all(isinstance(d, int) and d >= 0 for d in shape):
            raise SafetensorsError(f"tensor {name!r}: bad shape {shape!r}")
        if (
            not isinstance(offsets, list)
            or len(offsets) != 2
            or not all(isinstance(o, int) for o in offsets)
            or offsets[1] < offsets[0]
        ):
            raise SafetensorsError(f"tensor {name!r}: bad data_offsets {offsets!r}")
        out.append(TensorInfo(name, dtype, tuple(shape), offsets[1] - offsets[0]))
    return out


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
    with path.open("wb") as f:
        f.write(struct.pack("<Q", len(raw)))
        f.write(raw)
        f.write(bytes(offset))
