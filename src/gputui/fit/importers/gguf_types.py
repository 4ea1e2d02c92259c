"""What a GGUF header holds once read: its metadata and tensor infos, never the weights.

Apart from the reader (gguf.py) so that the rules that check a header (gguf_rules.py)
and the reader can both name these types without importing each other.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gputui.fit.transformer.formats import ggml_tensor_bytes


@dataclass(frozen=True, slots=True)
class GGUFTensor:
    name: str
    dims: tuple[int, ...]
    type_id: int

    @property
    def elements(self) -> int:
        n = 1
        for d in self.dims:
            n *= d
        return n

    @property
    def nbytes(self) -> int:
        return ggml_tensor_bytes(self.type_id, self.elements)


@dataclass(frozen=True, slots=True)
class GGUFFile:
    version: int
    metadata: dict[str, Any]
    tensors: tuple[GGUFTensor, ...]
