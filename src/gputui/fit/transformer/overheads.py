"""The per-process costs shared with the layer-list fit checker (one place to change at merge)."""

from __future__ import annotations

from gputui.fit.core.estimate import (
    ALLOCATOR_SLACK,
    TIGHT_MARGIN,
    Target,
    cuda_context_bytes,
    library_workspace_bytes,
    verdict,
)

__all__ = [
    "ALLOCATOR_SLACK",
    "TIGHT_MARGIN",
    "Target",
    "cuda_context_bytes",
    "library_workspace_bytes",
    "verdict",
]
