"""How many of a card's SMs a GEMM keeps busy: wave quantisation and split-K.

Wave quantisation (NVIDIA, "Matrix Multiplication Background User's Guide", section
"Wave Quantization"): a GEMM runs one thread block per output tile; T tiles on S
SMs take ceil(T / S) waves, the last one with SMs idle, so the GEMM reaches
T / (ceil(T / S) x S) of the card's rate. 128 x 128 output tiles (a common cuBLAS
FP16 tile; the guide's examples use 256 x 128) and one block per SM at a time are
assumed.

Split-K: when the output has fewer tiles than the card has SMs, cuBLAS (the dense
layers' GEMMs; `Op.split_k`) splits the reduction dimension K into slices, one block per (tile, slice), and sum
the partial tiles (CUTLASS "split-K serial": in the same kernel, through memory).
Without it a 128 x 128 output with K = 9,216 (a flattened feature map into a dense
layer) would run on one SM of 128, and a card with more, slower SMs would rank below
one with fewer, faster ones. The split modelled is the one that fills the SMs in a
single wave, with no slice shallower than a tile is wide (SPLIT_K_MIN_DEPTH: a
128 x 128 x 128 block has the arithmetic intensity of a square tile, so slicing
further would trade compute for memory traffic); each slice beyond the first writes
and reads back one fp32 partial tile. Convolutions (cuDNN's implicit GEMMs) and LLM
prefill (llama.cpp's own kernels) are timed without a split, as before: those
libraries choose among tile shapes instead, which is not modelled.
"""

from __future__ import annotations

import functools
import math

GEMM_TILE = (128, 128)
SPLIT_K_MIN_DEPTH = 128
PARTIAL_BYTES = 4  # fp32 partial sums


@functools.lru_cache(maxsize=8192)
def gemm_waves(m: int, n: int, sms: int, k: int = 0) -> tuple[float, int]:
    """(share of the SMs an (m x n)-output GEMM of depth `k` keeps busy, K slices).

    `k` = 0: the depth is unknown, no split (plain wave quantisation)."""
    if sms <= 0 or m <= 0 or n <= 0:
        return 1.0, 1
    tiles = math.ceil(m / GEMM_TILE[0]) * math.ceil(n / GEMM_TILE[1])
    splits = 1
    if tiles < sms and k >= 2 * SPLIT_K_MIN_DEPTH:
        splits = max(1, min(sms // tiles, k // SPLIT_K_MIN_DEPTH))
    blocks = tiles * splits
    return blocks / (math.ceil(blocks / sms) * sms), splits


def wave_efficiency(m: int, n: int, sms: int, k: int = 0) -> float:
    """Share of the SMs an (m x n)-output GEMM (depth `k`, 0: unknown) keeps busy."""
    return gemm_waves(m, n, sms, k)[0]


def split_k_bytes(m: int, n: int, splits: int) -> int:
    """Memory traffic of summing `splits` partial outputs: each extra one written and read."""
    return 2 * (splits - 1) * m * n * PARTIAL_BYTES


def gemm_depth(flops: float, m: int, n: int, splittable: bool = True) -> int:
    """K of a GEMM from its FLOPs (2 x m x n x K); 0 (no split) when the shape is unknown or
    the kernel is not one that splits K."""
    if m <= 0 or n <= 0 or not splittable:
        return 0
    return int(flops / (2 * m * n))
