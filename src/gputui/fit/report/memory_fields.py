"""The memory answer's JSON fields, in their order: a layer model's precision row and a
transformer's estimate say peak, limit and verdict alike, so one function writes them."""

from __future__ import annotations

from typing import Any

from gputui.fit.graph.estimate import PrecisionEstimate
from gputui.fit.transformer.estimate import Estimate


def memory_fields(e: PrecisionEstimate | Estimate) -> dict[str, Any]:
    """peak_bytes through max_batch_size, as both estimate formats write them."""
    return {
        "peak_bytes": e.peak_bytes,
        "tensor_bytes": e.breakdown.tensor_bytes,
        "peak_phase": e.peak_phase,
        "limit_bytes": e.limit_bytes,
        "fits": e.fits,
        "verdict": e.verdict,
        "max_batch_size": e.max_batch_size,
    }
