"""A GPU checked against, as JSON and as the line that heads its estimates: one format
for every model kind."""

from __future__ import annotations

from typing import Any

from gputui.fit.core.target import Target
from gputui.fit.units import gib


def target_dict(t: Target) -> dict[str, Any]:
    return {
        "name": t.name,
        "index": t.index,
        "catalog_card": t.card.name if t.card else None,
        "architecture": t.architecture.name if t.architecture else None,
        "compute_capability": t.compute_capability,
        "memory_total_bytes": t.memory_total,
        "memory_free_bytes": t.memory_free,
        "mig": None
        if t.mig is None
        else {
            "profile": t.mig.profile,
            "gpu_instance_id": t.mig.gpu_instance_id,
            "compute_instance_id": t.mig.compute_instance_id,
            "mig_index": t.mig.mig_index,
            "uuid": t.mig.uuid,
        },
    }


def unavailable_dict(u: Any) -> dict[str, Any]:
    """An installed GPU that could not be checked (fit.targets.Unavailable), with why."""
    return {"index": u.index, "name": u.name, "reason": u.reason}


def target_line(t: Target) -> str:
    arch = t.architecture.name if t.architecture else "unknown architecture"
    if t.index is None:
        return f"GPU: {t.name} (catalog card, {gib(t.memory_total)}, {arch})"
    card = f", catalog: {t.card.name}" if t.card and t.card.name != t.name else ""
    free = f"{gib(t.memory_free)} free of " if t.memory_free is not None else ""
    if t.mig is not None:  # a MIG instance: the job sees its memory, not the card's
        return (
            f"GPU {t.index} MIG {t.mig.label}: {t.mig.parent_name} ({free}{gib(t.memory_total)} "
            f"of this instance, {arch}; no speed estimate for a MIG slice)"
        )
    return f"GPU {t.index}: {t.name} ({free}{gib(t.memory_total)}, {arch}{card})"
