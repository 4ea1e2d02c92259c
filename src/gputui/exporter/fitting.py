"""`gputui_fit_max_batch`: for each configured model, the largest batch each GPU takes now.

Uses the same fit API as `gputui fit` and the TUI's fit screen
(`targets_from_snapshot` then `check`): a layer model in the precision gputui
recommends for the GPU's architecture, a transformer in its own workload (the
weights it is stored in), against the free memory of this poll. A GPU in MIG mode is
answered per MIG instance (a job gets one instance, never the card); an instance
without a GPU instance id is left out, since its series could not be labelled.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from gputui.exporter.families import CardName, FitAnswer
from gputui.model.snapshot import Snapshot

if TYPE_CHECKING:
    from gputui.catalog import Catalog
    from gputui.fit import AnyModel


def unservable(model: AnyModel) -> str | None:
    """Why `model` has no per-GPU largest batch to export (None: it has one)."""
    from gputui.fit import TransformerSpec

    if isinstance(model, TransformerSpec) and model.workload.gpus > 1:
        return (
            f"model {model.name!r}: its workload spans {model.workload.gpus} GPUs, and the "
            "exporter answers one GPU (or MIG instance) at a time"
        )
    return None


def fit_answers(
    snapshot: Snapshot, models: Sequence[AnyModel], catalog: Catalog
) -> list[FitAnswer]:
    from gputui.fit import FitRequest, ModelSpec, TorchSpec, check, recommend
    from gputui.fit.targets import targets_from_snapshot

    out: list[FitAnswer] = []
    if not models:
        return out
    for target in targets_from_snapshot(snapshot, catalog, mig_instances=True):
        if target.index is None or target.memory_free is None:
            continue
        slot = target.mig
        if slot is not None and slot.gpu_instance_id is None:
            continue
        for model in models:
            if isinstance(model, ModelSpec | TorchSpec):
                name = recommend(target.architecture, model.mode)[0]
                request = (
                    FitRequest(model, (target,), precision=name)
                    if isinstance(model, ModelSpec)
                    else FitRequest(model, (target,), precision=name)
                )
                est = check(request).checks[0].chosen
                precision, batch = est.precision, est.max_batch_size_free
            else:  # a transformer: its own workload, in the weights it is stored in
                found = check(FitRequest(model, (target,))).checks[0]
                precision, batch = found.recommended, found.estimate.max_batch_size_free
            if batch is None:
                continue
            if slot is None:
                out.append(FitAnswer(model.name, target.index, precision, batch))
            else:
                out.append(
                    FitAnswer(
                        model.name,
                        target.index,
                        precision,
                        batch,
                        slot.gpu_instance_id,
                        slot.profile,
                    )
                )
    return out


def card_names(snapshot: Snapshot, catalog: Catalog) -> dict[int, CardName]:
    """Catalog card and architecture per GPU index (empty names when unknown)."""
    out = {}
    for d in snapshot.devices:
        total = d.info.memory_total or (d.sample.memory_total if d.sample else None)
        cc = d.info.compute_capability
        match = catalog.match(d.info.name, total // 2**20 if total else None, cc)
        arch = match.architecture or (catalog.architecture_for_cc(cc) if cc else None)
        out[d.index] = CardName(
            match.card.name if match.card else None, arch.name if arch else None
        )
    return out
