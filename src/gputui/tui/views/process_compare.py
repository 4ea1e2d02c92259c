"""A process's memory beside each configured model's estimate for its GPU, Textual-free.

The process details' "compare with a configured model" (`c`): the models file the
dashboard knows, each model estimated by gputui.fit's check for the process's GPU
(its catalog card), in the same terms as NVML's per-process memory: tensors + CUDA
context + allocator reserve (docs/record.md, Predicted vs actual). Run off the UI
thread; at most MAX_MODELS models.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from gputui.catalog import load_catalog
from gputui.core.errors import UserError
from gputui.core.textsafe import visible
from gputui.fit import (
    FitRequest,
    ModelSpec,
    TorchSpec,
    check,
    load_any,
    targets_from_snapshot,
)
from gputui.fit.paths import resolve_models_path
from gputui.model.snapshot import GpuProcess, Snapshot

MAX_MODELS = 20


@dataclass(frozen=True)
class CompareRow:
    model: str
    tensors: int
    context: int
    allocator: int
    estimate: int  # the three above


@dataclass(frozen=True)
class Comparison:
    """The rows, or why there are none; `observed` is the process's memory compared."""

    card: str | None = None
    observed: int | None = None
    rows: tuple[CompareRow, ...] = ()
    error: str | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)


def compare(
    models_path: Path | None, snapshot: Snapshot, proc: GpuProcess, observed: int | None
) -> Comparison:
    notes: list[str] = []
    try:
        path, _origin = resolve_models_path(models_path, warn=notes.append)
        models = load_any(path)
    except UserError as exc:
        return Comparison(error=visible(str(exc)))
    found = [
        t
        for t in targets_from_snapshot(snapshot, load_catalog())
        if t.index == proc.gpu_index and t.mig is None
    ]
    if not found:
        return Comparison(error=f"GPU {proc.gpu_index}: its memory is unknown now")
    target = replace(found[0], memory_free=None)  # the card, not what is free now
    if len(models) > MAX_MODELS:
        notes.append(f"the first {MAX_MODELS} of {len(models)} models")
    rows = []
    for m in models[:MAX_MODELS]:
        try:
            if isinstance(m, ModelSpec):
                answer: Any = check(FitRequest(m, (target,), backend="cuda"))
            elif isinstance(m, TorchSpec):
                answer = check(FitRequest(m, (target,), backend="cuda"))
            else:
                answer = check(FitRequest(m, (target,), backend="cuda"))
            b = answer.checks[0].chosen.breakdown
        except UserError as exc:
            notes.append(f"{visible(m.name)}: {visible(str(exc))}")
            continue
        rows.append(CompareRow(m.name, b.tensor_bytes, b.cuda_context, b.allocator, b.total))
    card = target.card.name if target.card is not None else target.name
    from gputui.usage.observed import history

    past = history(card)  # what `gputui fit --against` kept about this card
    if past is not None:
        notes.append(past.line())
    return Comparison(card, observed, tuple(rows), None, tuple(notes))
