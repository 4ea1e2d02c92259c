"""The per-process costs shared with the layer-list fit checker (one place to change at merge)."""

from __future__ import annotations

from gputui.fit.estimate import (
    ALLOCATOR_SLACK,
    EFFICIENCY,
    LAUNCH_OVERHEAD_S,
    TIGHT_MARGIN,
    Target,
    cuda_context_bytes,
    library_workspace_bytes,
    verdict,
)

# Decode kernels stream the weights and the cache; they reach roughly this share of
# the datasheet bandwidth (an assumption, printed with every tokens/s figure).
BANDWIDTH_EFFICIENCY = 0.8

__all__ = [
    "ALLOCATOR_SLACK",
    "BANDWIDTH_EFFICIENCY",
    "EFFICIENCY",
    "LAUNCH_OVERHEAD_S",
    "TIGHT_MARGIN",
    "Target",
    "cuda_context_bytes",
    "library_workspace_bytes",
    "verdict",
]
