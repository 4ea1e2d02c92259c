"""Which GPUs `gputui fit` checks: a catalog card, or the installed GPUs (each unreadable
one listed with its reason), and the default precision a transformer gets on one."""

from __future__ import annotations

import argparse
from typing import Any


def targets(args: argparse.Namespace) -> tuple[list[Any], list[Any]]:
    """The fit targets, and the installed GPUs that cannot be one (with their reasons).

    Every installed GPU is accounted for: an unreadable or lost one is listed with its
    reason, never silently left out (the exit status then says the answer is partial).
    """
    from gputui.catalog import load_catalog
    from gputui.core.errors import UserError
    from gputui.fit import Target

    catalog = load_catalog()
    if args.gpu:
        card = catalog.find(args.gpu)
        arch = catalog.architectures.get(card.architecture)
        return [Target(card.name, card.memory_bytes, arch, card, card.compute_capability)], []
    from gputui.sources.base import open_source
    from gputui.sources.errors import SourceUnavailable

    try:
        source, _ = open_source("nvml", with_host=False)
    except SourceUnavailable as exc:
        raise UserError(
            f"no GPU to check against ({exc.reason}); pass --gpu NAME to use a catalog card, "
            "or --all-cards"
        ) from None
    try:
        snapshot = source.poll()
    finally:
        source.close()
    if args.index is not None and not any(d.index == args.index for d in snapshot.devices):
        have = ", ".join(str(d.index) for d in snapshot.devices) or "none"
        raise UserError(f"--index {args.index}: no such GPU (NVML indices: {have})")
    from gputui.fit.targets import targets_from_snapshot, unavailable_devices

    targets = targets_from_snapshot(snapshot, catalog, mig_instances=True)
    unavailable = unavailable_devices(snapshot)
    if args.index is not None:
        targets = [t for t in targets if t.index == args.index]
        unavailable = [u for u in unavailable if u.index == args.index]
    if not targets and not unavailable:
        raise UserError(
            "NVML reports no GPU; pass --gpu NAME to use a catalog card, or --all-cards"
        )
    return targets, unavailable


def precision_for(target: Any, mode: str) -> str:
    """A transformer's default precision on `target`: what the architecture trains in, else amp_bf16."""
    from gputui.fit import recommend

    name, _ = recommend(target.architecture, "train")
    return str(name) if mode == "train" else "amp_bf16"
