"""The GPU a model is checked against, whatever the model's kind."""

from __future__ import annotations

from dataclasses import dataclass

from gputui.catalog.models import Architecture, Card
from gputui.fit.core.mig import MigSlot


@dataclass(frozen=True, slots=True)
class Target:
    """The GPU a model is checked against: a catalog card, or what NVML saw."""

    name: str
    memory_total: int
    architecture: Architecture | None = None
    card: Card | None = None
    compute_capability: str | None = None
    memory_free: int | None = None  # right now, other processes included (installed GPUs)
    index: int | None = None  # NVML index for installed GPUs
    mig: MigSlot | None = None  # a MIG instance of GPU `index` (memory is the instance's)

    @property
    def cc(self) -> str | None:
        """The compute capability NVML reported, else the catalog card's."""
        return self.compute_capability or (self.card.compute_capability if self.card else None)


def card_target(card: Card, architectures: dict[str, Architecture] | None = None) -> Target:
    """A catalog card as a target (its whole memory, nothing else running)."""
    arch = architectures.get(card.architecture) if architectures else None
    return Target(card.name, card.memory_bytes, arch, card, card.compute_capability)
