"""One breakdown of a model's peak memory, for every model kind.

The front-ends (fit/graph: the layer walk; fit/transformer: layers, KV cache,
stages) describe the moments of a step as `Parts` by item; the core turns the
largest moment into a `Breakdown` with the per-process overheads, and solves the
largest batch that fits (fit/core/batch.py). The layer walk has no KV cache: a
breakdown names the items its kind has (`items`), and only those are reported.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from gputui.fit.core.sums import ItemSums

ITEMS = ("weights", "gradients", "optimizer_state", "activations", "kv_cache", "workspace")
# the items of a layer model (no KV cache): what its reports list
LAYER_ITEMS = ("weights", "gradients", "optimizer_state", "activations", "workspace")


@dataclass(frozen=True, slots=True)
class Parts(ItemSums[float]):
    """Bytes by item (ITEMS, in order); `+`, `scaled` and `total` item by item (fit/core/sums.py).

    Integer bytes stay integers (the layer walk); fractions are kept where a
    front-end divides (tensor parallel shares) and rounded up in the breakdown.
    """

    weights: float = 0
    gradients: float = 0
    optimizer_state: float = 0
    activations: float = 0
    kv_cache: float = 0
    workspace: float = 0


@dataclass(frozen=True, slots=True)
class Phase:
    """One moment of the step: bytes = fixed + per_sample * batch."""

    name: str
    fixed: Parts
    per_sample: Parts

    def at(self, batch: int) -> Parts:
        return self.fixed + self.per_sample.scaled(batch)


def peak_phase(phases: Sequence[Phase], batch: int) -> tuple[Phase, Parts]:
    """The largest of `phases` at `batch` (the first among equals), and its bytes then."""
    best = max(phases, key=lambda ph: ph.at(batch).total)
    return best, best.at(batch)


@dataclass(frozen=True, slots=True)
class Breakdown:
    """A peak in whole bytes: the tensors by item, then the process's overheads."""

    weights: int
    gradients: int
    optimizer_state: int
    activations: int
    kv_cache: int
    workspace: int
    cuda_context: int
    allocator: int
    items: tuple[str, ...] = ITEMS  # the items this model kind has (reported, in order)

    @property
    def tensor_bytes(self) -> int:
        return (
            self.weights + self.gradients + self.optimizer_state + self.activations
            + self.kv_cache + self.workspace
        )  # fmt: skip

    @property
    def total(self) -> int:
        return self.tensor_bytes + self.cuda_context + self.allocator

    def as_dict(self) -> dict[str, int]:
        return {k: getattr(self, k) for k in (*self.items, "cuda_context", "allocator")}


@dataclass(frozen=True, slots=True)
class Overheads:
    """What the process adds to the tensors: context, library workspace, allocator slack."""

    cuda_context: int = 0
    slack: float = 0.0
    library: int = 0  # cuBLAS workspace, added to the workspace item

    def breakdown(self, parts: Parts, items: tuple[str, ...] = ITEMS) -> Breakdown:
        """`parts` rounded up to whole bytes item by item, with the overheads."""
        vals = [
            math.ceil(parts.weights),
            math.ceil(parts.gradients),
            math.ceil(parts.optimizer_state),
            math.ceil(parts.activations),
            math.ceil(parts.kv_cache),
            math.ceil(parts.workspace) + self.library,
        ]
        tensor = sum(vals)
        w, g, o, a, k, ws = vals
        return Breakdown(w, g, o, a, k, ws, self.cuda_context, int(tensor * self.slack), items)

    def total(self, parts: Parts) -> int:
        """breakdown(parts).total without building it (searches call it often)."""
        tensor = (
            math.ceil(parts.weights) + math.ceil(parts.gradients)
            + math.ceil(parts.optimizer_state) + math.ceil(parts.activations)
            + math.ceil(parts.kv_cache) + math.ceil(parts.workspace) + self.library
        )  # fmt: skip
        return tensor + self.cuda_context + int(tensor * self.slack)
