"""Installed GPUs (from a telemetry snapshot) as fit targets, matched to catalog cards.

Pure: it reads a Snapshot the caller already polled, so fit/ never touches NVML.
"""

from __future__ import annotations

from gputui.catalog import Catalog
from gputui.fit.estimate import Target
from gputui.telemetry.snapshot import Snapshot


def targets_from_snapshot(snapshot: Snapshot, catalog: Catalog) -> list[Target]:
    """One target per device that reports its memory (failed devices are skipped)."""
    targets = []
    for d in snapshot.devices:
        sample = d.sample
        total = (sample.memory_total if sample else None) or d.info.memory_total
        if total is None:
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
