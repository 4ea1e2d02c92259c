"""PyTorch's CUDA caching allocator, as it sizes one tensor's block.

c10/cuda/CUDACachingAllocator.cpp: every request is rounded up to a multiple of
512 bytes (kMinBlockSize); requests up to 1 MiB come from the small pool's 2 MiB
segments, larger ones from 20 MiB segments (up to 10 MiB) or a segment of their own
rounded up to 2 MiB. A block of the small pool or a shared large segment can be
split, so its tensor costs its rounded size; a request over 10 MiB holds its whole
2 MiB-rounded segment.
"""

from __future__ import annotations

MIN_BLOCK = 512
SMALL_SIZE = 1 << 20  # kSmallSize: the small pool's largest request
MIN_LARGE_ALLOC = 10 << 20  # kMinLargeAlloc: above it a request gets its own segment
ROUND_LARGE = 2 << 20  # kRoundLarge


def cuda_block_bytes(n: int) -> int:
    """The bytes the caching allocator sets aside for a tensor of `n` bytes."""
    if n <= 0:
        return 0
    rounded = -(-n // MIN_BLOCK) * MIN_BLOCK
    if rounded > MIN_LARGE_ALLOC:
        return -(-rounded // ROUND_LARGE) * ROUND_LARGE
    return rounded
