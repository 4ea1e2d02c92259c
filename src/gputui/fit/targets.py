"""Installed GPUs (from a telemetry snapshot) as fit targets, matched to catalog cards.

Pure: it reads a Snapshot the caller already polled, so fit/ never touches NVML.
"""

from __future__ import annotations

from dataclasses import dataclass

from gputui.catalog import Catalog
from gputui.fit.estimate import Target
from gputui.telemetry.snapshot import DeviceSnapshot, Snapshot


@dataclass(frozen=True, slots=True)
class Unavailable:
    """An installed GPU no model can be placed on, and why (shown, never skipped)."""

    index: int
    name: str
    reason: str


def unavailable_reason(dev: DeviceSnapshot) -> str | None:
    """Why `dev` cannot be a fit target now (lost, no data, memory unreadable), or None."""
    if dev.failed is not None:
        return dev.failed
    sample = dev.sample
    if sample is None:
        return "no data from this GPU"
    if (sample.memory_total or dev.info.memory_total) is None:
        if "memory_total" in dev.unsupported:
            return "it does not report its memory (NotSupported)"
        return "its memory could not be read"
    return None


def unavailable_devices(snapshot: Snapshot) -> list[Unavailable]:
    """The installed GPUs that cannot be fit targets, with their reasons, in NVML order."""
    out = []
    for dev in snapshot.devices:
        reason = unavailable_reason(dev)
        if reason is not None:
            out.append(Unavailable(dev.index, dev.info.name, reason))
    return out


def targets_from_snapshot(snapshot: Snapshot, catalog: Catalog) -> list[Target]:
    """One target per device that reports its memory; see `unavailable_devices` for the rest."""
    targets = []
    for d in snapshot.devices:
        sample = d.sample
        total = (sample.memory_total if sample else None) or d.info.memory_total
        if total is None or unavailable_reason(d) is not None:
            continue
        cc = d.info.compute_capability
        match = catalog.match(d.info.name, total // 2**20, cc)
        arch = match.architecture or (catalog.architecture_for_cc(cc) if cc else None)
        targets.append(
            Target(
                d.info.name,
                total,
                arch,
                match.card,
                cc,
                memory_free=sample.memory_free if sample else None,
                index=d.index,
            )
        )
    return targets
