"""Where the TUI's fit answers are placed: a whole GPU, or one MIG instance of it.

With MIG mode on a CUDA job gets one instance, never the card, so the
Fit screen and the dashboard's fit line check each instance (`targets_from_snapshot`
with `mig_instances=True`). Their rows and lines are keyed by (GPU index, GPU
instance id) rather than by index alone, and named by the instance. Kept light:
the dashboard imports this before the fit engine is loaded.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from gputui.core.textsafe import visible
from gputui.model.snapshot import Snapshot

if TYPE_CHECKING:
    from gputui.fit import ModelCheck, Target, TransformerCheck

# (GPU index, GPU instance id); None for the whole GPU. A MIG instance NVML gives no GI id
# is keyed by its MIG device index past any real id (GI ids are below 64).
TargetKey = tuple[int, int | None]
_NO_GI = 1000


def mig_key(index: int, gpu_instance_id: int | None, mig_index: int) -> TargetKey:
    return (index, gpu_instance_id if gpu_instance_id is not None else _NO_GI + mig_index)


def target_key(target: Target) -> TargetKey | None:
    """The row key of a target; None for a target that is not an installed GPU."""
    if target.index is None:
        return None
    slot = target.mig
    if slot is None:
        return (target.index, None)
    return mig_key(target.index, slot.gpu_instance_id, slot.mig_index)


def sort_key(key: TargetKey) -> tuple[int, int]:
    """The whole GPU (or its unavailable line) first, then its instances by GI id."""
    return (key[0], -1 if key[1] is None else key[1])


def target_label(target: Target, short_name: str | None = None) -> str:
    """ "GPU 0" or "GPU 0 MIG 3g.40gb (GI 1 / CI 0)"; with `short_name`, "0: A100 ..." style."""
    slot = target.mig
    where = f"MIG {visible(slot.label)}" if slot is not None else ""
    if short_name is not None:
        return f"{target.index}: {where or short_name}"
    return f"GPU {target.index}" + (f" {where}" if where else "")


def free_by_key(snapshot: Snapshot) -> dict[TargetKey, int | None]:
    """Free memory now of every whole GPU and every MIG instance in `snapshot`."""
    out: dict[TargetKey, int | None] = {}
    for d in snapshot.devices:
        if d.sample is not None:
            out[(d.index, None)] = d.sample.memory_free
        for m in d.mig_devices:
            out[mig_key(d.index, m.gpu_instance_id, m.index)] = m.memory_free
    return out


def mig_inputs(snapshot: Snapshot) -> tuple[tuple[int, int | None, int | None, int | None], ...]:
    """What the estimates read of the MIG instances: (GPU, GI, total, free) each."""
    return tuple(
        (d.index, m.gpu_instance_id, m.memory_total, m.memory_free)
        for d in snapshot.devices
        for m in d.mig_devices
    )


def mig_advice(checks: Iterable[ModelCheck | TransformerCheck], model_name: str) -> list[str]:
    """`gputui fit`'s MIG advice for one model: which instance or profile would hold it."""
    from gputui.fit import advice_lines

    placed = [(c.target, c.chosen.peak_bytes) for c in checks if c.model.name == model_name]
    return [visible(line) for line in advice_lines(placed, prefix="")]


def preferred(key: TargetKey | None, gpu: int | None, gpu_instance: int | None) -> bool:
    """Whether a row's target is the one the dashboard had selected (`gpu`, its instance)."""
    if key is None or gpu is None or key[0] != gpu:
        return False
    return gpu_instance is None or key[1] == gpu_instance
