"""Catalog card labels for the installed GPUs, computed once per device off the UI thread.

The catalog package may be absent or broken in a partial checkout; the panel
then simply shows NVML's own architecture word.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from gputui.model.snapshot import DeviceInfo

CardLookup = Callable[[Sequence[DeviceInfo]], dict[int, str]]


def catalog_labels(devices: Sequence[DeviceInfo]) -> dict[int, str]:
    try:
        from gputui.catalog import load_catalog
    except ImportError:
        return {}
    try:
        catalog = load_catalog()
    except Exception:  # a broken catalog must not take the dashboard down
        return {}
    labels: dict[int, str] = {}
    for info in devices:
        mib = None if info.memory_total is None else info.memory_total // (1024 * 1024)
        try:
            result = catalog.match(info.name, memory_mib=mib, cc=info.compute_capability)
        except Exception:
            continue
        label = describe(result)
        if label:
            labels[info.index] = label
    return labels


def describe(result: object) -> str | None:
    """'Ampere · RTX 3090 24 GiB' style label from a MatchResult (duck-typed)."""
    card = getattr(result, "card", None)
    arch = getattr(result, "architecture", None)
    arch_name = getattr(arch, "name", None)
    if card is not None:
        arch_name = arch_name or str(getattr(card, "architecture", "")).capitalize()
        return f"{arch_name} · catalog: {card.name}".strip(" ·")
    if arch_name:
        return str(arch_name)
    return None
