"""What one traced step leaves behind, as plain data (no torch): allocations and frees
in order, a marker after every op, and each op's work for the timing model.

A storage is counted once however many views share it. Its category is decided when
the step is over, from what it turned out to be (a parameter, a gradient, optimizer
state, the batch) or else from the stage that made it: the forward pass makes
activations, the loss, backward and optimizer make temporaries.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

# the categories a traced byte belongs to, as MemTracker names them
CATEGORIES = ("parameters", "gradients", "optimizer_state", "activations", "temporaries")


@dataclass(frozen=True, slots=True)
class OpRecord:
    """One aten op: its work for the roofline and where in the model it ran."""

    name: str
    op_class: str  # "matmul" | "elementwise" | "reduction"
    stage: str  # "forward" | "loss" | "backward" | "optimizer"
    flops: float
    bytes: float
    module: str
    dims: tuple[int, ...] = ()  # a matmul's inner sizes, for tensor-core alignment


@dataclass(slots=True)
class Timeline:
    """Allocation events in order: (uid, +bytes) on allocation, (uid, -bytes) on free,
    (-1, moment) after each op. `labels[moment]` says when and where the op ran."""

    events: list[tuple[int, int]] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)
    stage_of: dict[int, str] = field(default_factory=dict)  # uid -> the stage that made it
    fixed_category: dict[int, str] = field(default_factory=dict)  # uid -> known category
    ops: list[OpRecord] = field(default_factory=list)
    first_moment: int = 0  # the moment the measured step starts (training: step 2)
    first_op: int = 0
    extra: dict[int, int] = field(default_factory=dict)  # moment -> bytes a kernel adds
    notes: list[str] = field(default_factory=list)

    def category(self, uid: int) -> str:
        known = self.fixed_category.get(uid)
        if known is not None:
            return known
        return "activations" if self.stage_of.get(uid) == "forward" else "temporaries"

    def totals(self, rounding: Callable[[int], int] | None = None) -> list[dict[str, int]]:
        """Bytes alive per category right after each op of the measured step; `rounding`:
        what an allocator sets aside for a tensor of so many bytes (None: exactly them)."""
        alive = dict.fromkeys(CATEGORIES, 0)
        out: list[dict[str, int]] = []
        moment = -1
        for uid, n in self.events:
            if uid == -1:
                moment = n
                if moment >= self.first_moment:
                    snap = dict(alive)
                    add = self.extra.get(moment, 0)
                    if add:
                        snap["temporaries"] += add
                    out.append(snap)
                continue
            if rounding is not None:
                n = rounding(n) if n > 0 else -rounding(-n)
            alive[self.category(uid)] += n
        return out
