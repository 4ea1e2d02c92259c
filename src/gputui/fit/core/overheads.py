"""What a CUDA process pays on top of its tensors, for every model kind.

The CUDA context, the cuBLAS workspace and the caching allocator's slack do not
depend on the model: the layer engine and the transformer engine both add them
here, so a change to an overhead is made once.
"""

from __future__ import annotations

from typing import Literal

Backend = Literal["cuda", "cpu"]  # where the model runs: a GPU pays the overheads, a CPU none

ALLOCATOR_SLACK = 0.05  # PyTorch's caching allocator rounds blocks up and fragments


def cuda_context_bytes(cc: str | None) -> int:
    """A CUDA context with PyTorch's kernels loaded lazily (CUDA >= 11.7 default).

    Typical figures reported by nvidia-smi for a fresh `torch.cuda.init()`; Hopper
    and newer load more module code.
    """
    major = _major(cc)
    if major is not None and major >= 9:
        return 512 * 2**20
    if major is not None and major < 7:
        return 300 * 2**20
    return 400 * 2**20


def library_workspace_bytes(cc: str | None) -> int:
    """cuBLAS workspace PyTorch allocates through its allocator (32 MiB on Hopper+)."""
    major = _major(cc)
    return (32 if major is not None and major >= 9 else 8) * 2**20


def _major(cc: str | None) -> int | None:
    try:
        return int(str(cc).split(".")[0]) if cc else None
    except ValueError:
        return None
