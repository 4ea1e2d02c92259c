"""MIG instances as fit targets, and which instance profile a job would need.

With MIG mode on, a CUDA job runs in one MIG instance and sees only its memory,
never the whole card: the fit targets of such a GPU are its instances. When no
configured instance can take the job now, `advice` says what would: freeing
memory in one of them, or a profile large enough, from the profile table below.

Profiles (source: NVIDIA Multi-Instance GPU User Guide, "Supported MIG
Profiles", the A100-SXM4-40GB, A100-SXM4-80GB and H100 80GB tables: the
"Fraction of Memory" and "Fraction of SMs" columns, memory in eighths and
compute in sevenths). Only the profiles of those tables gputui is sure of are
listed; a GPU or profile not listed gets no profile advice, only a note that
gputui does not know it. The guide gives fractions, not byte counts, so a
profile's memory is scaled from an instance actually seen on the same GPU
(NVML's total for it divided by its eighths) and shown as "about".
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

GIB = 1 << 30

# (profile, compute sevenths, memory eighths), smallest first; "+me" variants (one
# instance with the media engines) have their base profile's memory.
PROFILES_40GB: tuple[tuple[str, int, int], ...] = (
    ("1g.5gb", 1, 1),
    ("2g.10gb", 2, 2),
    ("3g.20gb", 3, 4),
    ("4g.20gb", 4, 4),
    ("7g.40gb", 7, 8),
)
PROFILES_80GB: tuple[tuple[str, int, int], ...] = (
    ("1g.10gb", 1, 1),
    ("2g.20gb", 2, 2),
    ("3g.40gb", 3, 4),
    ("4g.40gb", 4, 4),
    ("7g.80gb", 7, 8),
)


@dataclass(frozen=True, slots=True)
class MigSlot:
    """Which MIG instance of its parent GPU a fit target is."""

    parent_index: int
    parent_name: str
    mig_index: int
    profile: str | None
    gpu_instance_id: int | None
    compute_instance_id: int | None
    uuid: str | None = None
    parent_memory_total: int | None = None

    @property
    def label(self) -> str:
        """ "3g.40gb (GI 1 / CI 0)": how the instance is named in the output."""
        gi = "?" if self.gpu_instance_id is None else str(self.gpu_instance_id)
        ci = "" if self.compute_instance_id is None else f" / CI {self.compute_instance_id}"
        return f"{self.profile or 'unknown profile'} (GI {gi}{ci})"


def profiles_for(parent_name: str, parent_total: int | None) -> tuple[tuple[str, int, int], ...]:
    """The profile table of an A100/H100 by its memory class; () for a GPU not listed."""
    name = parent_name.upper()
    if "A100" not in name and "H100" not in name:
        return ()
    if parent_total is None:
        return ()
    gib = parent_total / GIB
    if "A100" in name and 36 <= gib <= 42:
        return PROFILES_40GB
    if 72 <= gib <= 82:
        return PROFILES_80GB
    return ()


def _base(profile: str | None) -> str | None:
    return None if profile is None else profile.split("+", 1)[0]


def _eighths(table: tuple[tuple[str, int, int], ...], profile: str | None) -> int | None:
    base = _base(profile)
    return next((m for p, _, m in table if p == base), None)


@dataclass(frozen=True, slots=True)
class Instance:
    """One instance's part in the advice: its slot, memory total and free, and the peak."""

    slot: MigSlot
    memory_total: int
    memory_free: int | None
    peak: int


def advice(instances: list[Instance], parent_total: int | None) -> str | None:
    """One line on where the job could run in this MIG GPU, or None when it fits now.

    e.g. "fits the 3g.40gb (GI 1 / CI 0) once 4.6 GiB is freed there; an empty
    instance needs 3g.40gb (about 39.2 GiB) or larger"."""
    if not instances:
        return None
    if any(i.memory_free is not None and i.peak <= i.memory_free for i in instances):
        return None
    parts: list[str] = []
    room = [i for i in instances if i.peak <= i.memory_total and i.memory_free is not None]
    if room:
        best = max(room, key=lambda i: i.memory_free or 0)
        short = best.peak - (best.memory_free or 0)
        need = math.ceil(short / GIB * 10) / 10  # rounded up: freeing what is shown is enough
        parts.append(f"fits the {best.slot.label} once {need:.1f} GiB is freed there")
    else:
        parts.append("fits in none of the configured instances, even empty")
    slot = instances[0].slot
    table = profiles_for(slot.parent_name, parent_total)
    sizes = _sizes(table, instances)
    peak = max(i.peak for i in instances)
    if not table or sizes is None:
        parts.append("gputui does not know this GPU's MIG profiles to say which would hold it")
        return "; ".join(parts)
    for profile, _, eighths in table:
        size = sizes(eighths)
        if peak <= size:
            parts.append(
                f"an empty instance needs {profile} (about {size / GIB:.1f} GiB) or larger"
            )
            return "; ".join(parts)
    largest, _, eighths = table[-1]
    parts.append(
        f"no MIG profile holds it (the largest, {largest}, has about "
        f"{sizes(eighths) / GIB:.1f} GiB): it needs the GPU with MIG off, or several GPUs"
    )
    return "; ".join(parts)


def _sizes(table: tuple[tuple[str, int, int], ...], instances: list[Instance]) -> Any:
    """size(eighths) -> bytes: an instance seen with that many eighths gives its own total;
    other sizes are scaled by the smallest memory per eighth seen (the low side, so a
    profile is never said to hold a job it may not). None when no instance is in the table."""
    seen: dict[int, int] = {}
    for i in instances:
        e = _eighths(table, i.slot.profile)
        if e:
            seen[e] = max(seen.get(e, 0), i.memory_total)
    if not seen:
        return None
    per_eighth = min(total / e for e, total in seen.items())

    def size(eighths: int) -> float:
        return seen.get(eighths, per_eighth * eighths)

    return size


def advice_lines(
    placed: list[tuple[Any, int]], prefix: str = "  ", host: str | None = None
) -> list[str]:
    """The `advice` of each MIG GPU among (fit target, peak bytes) pairs, one line per GPU.

    Targets that are not MIG instances are ignored; so are GPUs where the job fits now."""
    groups: dict[int, list[Instance]] = {}
    totals: dict[int, int | None] = {}
    for target, peak in placed:
        slot = getattr(target, "mig", None)
        if not isinstance(slot, MigSlot):
            continue
        groups.setdefault(slot.parent_index, []).append(
            Instance(slot, target.memory_total, target.memory_free, peak)
        )
        totals[slot.parent_index] = slot.parent_memory_total
    lines = []
    for index, instances in groups.items():
        line = advice(instances, totals[index])
        if line is not None:
            where = f"{host} GPU {index}" if host else f"GPU {index}"
            lines.append(f"{prefix}MIG on {where}: {line}")
    return lines
