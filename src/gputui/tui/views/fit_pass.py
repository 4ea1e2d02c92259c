"""One Fit pass, Textual-free: read the models file (again only when it changed), check
every model on every usable GPU, rank the catalog's cards, all within a time budget.

Run in a thread worker by the Fit screen (screens/fit.py) and by the dashboard's fit
line (widgets/fit_line.py); what it finds is a FitPass, applied on the UI thread. The
models file may be anyone's (`./gputui.toml` in a shared directory) and huge or
hostile: the budget is checked between models, and a pass over it stops, says so,
and returns what it has. A GPU that failed, has no data or does not report its
memory is an Unavailable with its reason, never a place a model fits; a GPU in MIG
mode is checked per instance (views/fit_targets.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from gputui.catalog import load_catalog
from gputui.core.errors import UserError
from gputui.core.textsafe import visible
from gputui.fit import (
    AnyModel,
    FitRequest,
    ModelCheck,
    ModelSpec,
    Ranked,
    Target,
    TorchSpec,
    TransformerCheck,
    TransformerSpec,
    check,
    load_any,
)
from gputui.fit.paths import resolve_models_path
from gputui.fit.targets import (
    Unavailable,
    targets_from_snapshot,
    unavailable_devices,
    unavailable_reason,
)
from gputui.model.snapshot import DeviceSnapshot, Snapshot
from gputui.tui.views.fit_result import FitPass
from gputui.tui.views.fit_targets import mig_inputs

__all__ = ["FitPass", "estimate_inputs", "estimate_pass", "mtime_of", "split_devices"]

ESTIMATE_BUDGET_S = 5.0  # one pass over every model and GPU; the rest is skipped after it


def split_devices(snapshot: Snapshot) -> tuple[Snapshot, list[Unavailable]]:
    """The snapshot with only usable GPUs, and the others with their reasons."""
    usable: list[DeviceSnapshot] = []
    # shared with `gputui fit` (fit/targets.py); a MIG instance with unreadable memory too
    lost = unavailable_devices(snapshot)
    for dev in snapshot.devices:
        if unavailable_reason(dev) is None:
            usable.append(dev)
    if len(usable) == len(snapshot.devices):
        return snapshot, lost
    return replace(snapshot, devices=tuple(usable)), lost


def estimate_inputs(snapshot: Snapshot) -> tuple[object, ...]:
    """What the estimates read of a snapshot: a new pass is due only when this changes."""
    whole = tuple(
        (
            d.index,
            d.failed,
            d.unsupported,
            None if d.sample is None else (d.sample.memory_total, d.sample.memory_free),
        )
        for d in snapshot.devices
    )
    return (*whole, mig_inputs(snapshot))


def mtime_of(path: Path | None) -> float | None:
    try:
        return path.stat().st_mtime if path is not None else None
    except OSError:
        return None


def _check_one(model: ModelSpec, target: Target) -> ModelCheck:
    """A layer model on one GPU, every precision that applies (the Fit screen's rows)."""
    return check(FitRequest(model, (target,))).checks[0]


def estimate_pass(
    requested: Path | None,
    snapshot: Snapshot | None,
    previous: FitPass | None,
    *,
    reload: bool = False,
    budget_s: float = ESTIMATE_BUDGET_S,
    clock: Callable[[], float] = time.monotonic,
    estimate: Callable[[ModelSpec, Target], ModelCheck] | None = None,
    rank: bool = True,
) -> FitPass:
    """Read the models file (again only when it changed) and check every model on every GPU.

    `rank=False` (the dashboard's fit line) skips ranking the catalog's cards, the slow part.
    """
    estimate = estimate or _check_one
    started = clock()
    warnings: list[str] = []
    catalog = previous.catalog if previous is not None else None
    try:
        if catalog is None:
            catalog = load_catalog()
        path, origin = resolve_models_path(requested, warn=warnings.append)
    except UserError as exc:
        return FitPass(error=visible(str(exc)), catalog=catalog, elapsed_s=clock() - started)
    mtime = mtime_of(path)
    models: tuple[AnyModel, ...]
    error: str | None = None
    rankings: dict[str, list[Ranked[Any]]] = {}
    if (
        not reload
        and previous is not None
        and previous.path == path
        and previous.mtime == mtime
        and previous.error is None
    ):
        models, rankings = previous.models, dict(previous.rankings)
        warnings = list(previous.warnings)
    else:
        try:
            models = load_any(path)  # the importer registry: any model file `fit` reads
        except UserError as exc:
            models, error = (), visible(str(exc))
    read = FitPass(
        path=path,
        origin=origin,
        mtime=mtime,
        models=models,
        error=error,
        warnings=tuple(warnings),
        catalog=catalog,
        rankings=rankings,
    )
    if snapshot is None:
        return replace(read, elapsed_s=clock() - started)
    usable, lost = split_devices(snapshot)
    targets = tuple(targets_from_snapshot(usable, catalog, mig_instances=True))
    checks: list[ModelCheck | TransformerCheck] = []
    stopped: str | None = None
    total = len(targets) * len(models)
    for model in models:
        for target in targets:
            if clock() - started > budget_s:
                stopped = (
                    f"stopped after {len(checks)} of {total} estimates: over the "
                    f"{budget_s:g} s budget (a very large models file?)"
                )
                break
            if isinstance(model, TransformerSpec):  # its own estimator, same budget
                checks.append(check(FitRequest(model, (target,))).checks[0])
            elif isinstance(model, TorchSpec):  # traced once, then checked like a layer model
                try:
                    checks.append(check(FitRequest(model, (target,))).checks[0])
                except UserError as exc:  # the user's code failed: said once, not a crash
                    warnings.append(visible(str(exc)))
                    break
            else:
                checks.append(estimate(model, target))
        if stopped:
            break
    # Ranking every catalog card is the slow part: done with what is left of the budget,
    # kept across passes, so a later pass completes it.
    for model in models if rank else ():
        if clock() - started > budget_s:
            break
        if model.name in rankings:
            continue
        # one dict for every kind; the two branches only pick check()'s typed overload
        if isinstance(model, TransformerSpec):
            rankings[model.name] = list(check(FitRequest(model, catalog=catalog)).ranked)
        elif isinstance(model, TorchSpec):
            try:
                rankings[model.name] = list(check(FitRequest(model, catalog=catalog)).ranked)
            except UserError:  # said by the check above
                continue
        else:
            rankings[model.name] = list(check(FitRequest(model, catalog=catalog)).ranked)
    return replace(
        read,
        targets=targets,
        unavailable=tuple(lost),
        checks=tuple(checks),
        rankings=rankings,
        stopped=stopped,
        elapsed_s=clock() - started,
    )
