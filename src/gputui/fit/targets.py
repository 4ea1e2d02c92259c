"""Installed GPUs (from a telemetry snapshot) as fit targets, matched to catalog cards.

Pure: it reads a Snapshot the caller already polled, so fit/ never touches NVML.
"""

from __future__ import annotations

from dataclasses import dataclass

from gputui.catalog import Catalog
from gputui.fit.core.mig import MigSlot
from gputui.fit.core.target import Target
from gputui.model.snapshot import DeviceSnapshot, Snapshot


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
    if dev.info.mig_mode and not dev.mig_devices:
        return (
            "MIG mode is on and NVML lists no MIG instance (none configured, or not visible "
            "with these permissions): a CUDA job cannot be placed on it"
        )
    if (sample.memory_total or dev.info.memory_total) is None:
        if "memory_total" in dev.unsupported:
            return "it does not report its memory (NotSupported)"
        return "its memory could not be read"
    return None


def unavailable_devices(snapshot: Snapshot) -> list[Unavailable]:
    """The installed GPUs that cannot be fit targets, with their reasons, in NVML order.

    A MIG instance whose memory cannot be read is listed too, named by its profile."""
    out = []
    for dev in snapshot.devices:
        reason = unavailable_reason(dev)
        if reason is not None:
            out.append(Unavailable(dev.index, dev.info.name, reason))
            continue
        for m in dev.mig_devices:
            if m.memory_total is None:
                name = f"{dev.info.name} MIG {m.profile or m.index}"
                out.append(Unavailable(dev.index, name, "its memory could not be read"))
    return out


def mig_targets(dev: DeviceSnapshot, catalog: Catalog) -> list[Target]:
    """One target per MIG instance of `dev` (MIG mode on): its own memory total and free.

    No catalog card: a card's speed figures are the whole GPU's, not a slice's, so a MIG
    target has no speed estimate rather than a wrong one."""
    cc = dev.info.compute_capability
    parent_total = dev.info.memory_total or (dev.sample.memory_total if dev.sample else None)
    match = catalog.match(dev.info.name, (parent_total or 0) // 2**20, cc)
    arch = match.architecture or (catalog.architecture_for_cc(cc) if cc else None)
    out = []
    for m in dev.mig_devices:
        if m.memory_total is None:
            continue
        slot = MigSlot(
            dev.index,
            dev.info.name,
            m.index,
            m.profile,
            m.gpu_instance_id,
            m.compute_instance_id,
            m.uuid,
            parent_total,
        )
        name = m.name or f"{dev.info.name} MIG {m.profile or m.index}"
        out.append(Target(name, m.memory_total, arch, None, cc, m.memory_free, dev.index, slot))
    return out


def targets_from_snapshot(
    snapshot: Snapshot, catalog: Catalog, *, mig_instances: bool = False
) -> list[Target]:
    """One target per device that reports its memory; see `unavailable_devices` for the rest.

    `mig_instances`: one target per MIG instance of a GPU in MIG mode (a job gets an
    instance, never the card), as `gputui fit` does. Off by default for the callers that
    key their answers by GPU index alone (the exporter's fit metrics, the TUI's Fit
    screen): several instances of one GPU would give them one key twice."""
    targets: list[Target] = []
    for d in snapshot.devices:
        if mig_instances and d.mig_devices and unavailable_reason(d) is None:
            targets += mig_targets(d, catalog)
            continue
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
