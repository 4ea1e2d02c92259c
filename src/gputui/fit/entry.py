"""The one entry to the fit engine: `check(FitRequest) -> FitAnswer`, for any model kind.

The CLI, the Fit screen, the dashboard's fit line, the exporter and the fleet ask
here rather than an engine. A request holds the model description (a layer model,
ModelSpec, a traced PyTorch module or any other PhasedModel, or a transformer with its workload, TransformerSpec), the workload's
overrides and the targets, and optionally a catalog to rank; the answer holds one
check per target (ModelCheck or TransformerCheck, which answer under the same
names: `chosen`, `estimates`, `recommended`, `target`, `model.name`) and the
ranking. Which engine runs is decided here, once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Generic, TypeVar, overload

from gputui.fit.core.overheads import Backend
from gputui.fit.core.phased import PhasedModel
from gputui.fit.core.ranking import Ranked, rank_cards
from gputui.fit.core.target import Target
from gputui.fit.graph.estimate import ModelCheck, PrecisionEstimate
from gputui.fit.graph.estimate import check as check_graph
from gputui.fit.graph.gcpause import collector_paused
from gputui.fit.graph.ranking import graph_row
from gputui.fit.graph.spec import ModelSpec
from gputui.fit.torch.spec import TorchSpec
from gputui.fit.transformer.context import mark_longer_context
from gputui.fit.transformer.estimate import Estimate, estimate
from gputui.fit.transformer.ranking import transformer_row
from gputui.fit.transformer.spec import TransformerSpec
from gputui.fit.transformer.workload import Workload

if TYPE_CHECKING:
    from gputui.catalog import Catalog
    from gputui.catalog.models import Card

__all__ = [
    "FitAnswer",
    "FitRequest",
    "ModelCheck",
    "Ranked",
    "Target",
    "TransformerCheck",
    "check",
]

M = TypeVar("M", ModelSpec, PhasedModel, TorchSpec, TransformerSpec)
C = TypeVar("C")
R = TypeVar("R")


@dataclass(frozen=True, slots=True)
class TransformerCheck:
    """A transformer on one GPU, answering under ModelCheck's names."""

    model: TransformerSpec
    target: Target
    estimate: Estimate

    @property
    def chosen(self) -> Estimate:
        """The estimate the row shows (a transformer has one: its workload's)."""
        return self.estimate

    @property
    def estimates(self) -> tuple[Estimate, ...]:
        """Like ModelCheck.estimates (one per precision): a transformer has its workload's."""
        return (self.estimate,)

    @property
    def recommended(self) -> str:
        """What the Precision column shows: the weights' format (and the KV cache's)."""
        wl = self.estimate.workload
        if wl.mode == "generate" and wl.kv_dtype != wl.weights:
            return f"{wl.weights}, KV {wl.kv_dtype}"
        return wl.weights

    @property
    def mode(self) -> str:
        return self.estimate.workload.mode

    @property
    def batch_size(self) -> int:
        return self.estimate.workload.batch_size


@dataclass(frozen=True, slots=True)
class FitRequest(Generic[M]):
    """What to estimate: a model description, its workload and the targets.

    A layer model carries its workload (mode, batch, precision) in its ModelSpec and
    `batch_size`/`precision` override it (None: the spec's, every precision that
    applies when it names none); a transformer's workload is `workload`, else its
    TransformerSpec's. `catalog`: also rank every card of it (`pick` chooses a
    transformer's parallel strategy per card; `budget_usd` ranks only the cards whose
    launch price is within it, then those without a price, fit.core.ranking). `with_speed=False` leaves a layer
    model's speeds None (callers that show only memory).
    """

    model: M
    targets: tuple[Target, ...] = ()
    workload: Workload | None = None
    catalog: Catalog | None = None
    batch_size: int | None = None
    precision: str | None = None
    backend: Backend | None = None
    with_peak_tensors: bool = False
    with_speed: bool = True
    allow_longer_context: bool = False
    pick: Callable[[Workload, Target], Workload] | None = None
    budget_usd: float | None = None


@dataclass(frozen=True, slots=True)
class FitAnswer(Generic[C, R]):
    """The answer to one FitRequest: a check per target (in the request's order) and,
    when a catalog was given, every card ranked (those that fit first)."""

    model: ModelSpec | PhasedModel | TransformerSpec
    checks: tuple[C, ...]
    ranked: tuple[R, ...] = ()
    workload: Workload | None = None  # a transformer's, as estimated; None for a layer model


@overload
def check(request: FitRequest[ModelSpec]) -> FitAnswer[ModelCheck, Ranked[PrecisionEstimate]]: ...


@overload
def check(
    request: FitRequest[PhasedModel],
) -> FitAnswer[ModelCheck, Ranked[PrecisionEstimate]]: ...


@overload
def check(
    request: FitRequest[TorchSpec],
) -> FitAnswer[ModelCheck, Ranked[PrecisionEstimate]]: ...


@overload
def check(
    request: FitRequest[TransformerSpec],
) -> FitAnswer[TransformerCheck, Ranked[Estimate]]: ...


def check(
    request: FitRequest[ModelSpec]
    | FitRequest[PhasedModel]
    | FitRequest[TorchSpec]
    | FitRequest[TransformerSpec],
) -> (
    FitAnswer[ModelCheck, Ranked[PrecisionEstimate]] | FitAnswer[TransformerCheck, Ranked[Estimate]]
):
    """Every target of `request` checked, and the catalog's cards ranked when one is given."""
    if isinstance(request.model, TransformerSpec):
        return _check_transformer(request.model, request)
    if isinstance(request.model, TorchSpec):  # a models file's torch table: traced when asked
        spec = request.model
        if request.precision is None and spec.precision is not None:
            request = replace(request, precision=spec.precision)
        return _check_graph(_traced(spec, request.backend or "cuda"), request)
    return _check_graph(request.model, request)


_TRACED: dict[tuple[TorchSpec, str], PhasedModel] = {}


def _traced(spec: TorchSpec, backend: str) -> PhasedModel:
    """The traced model of `spec` (one per spec and backend: the Fit screen asks again)."""
    from gputui.fit.torch.build import traced_model

    key = (spec, backend)
    if key not in _TRACED:
        if len(_TRACED) >= 16:
            _TRACED.clear()
        _TRACED[key] = traced_model(spec, backend)
    return _TRACED[key]


def _check_graph(
    model: ModelSpec | PhasedModel,
    request: FitRequest[ModelSpec] | FitRequest[PhasedModel] | FitRequest[TorchSpec],
) -> FitAnswer[ModelCheck, Ranked[PrecisionEstimate]]:
    checks = tuple(
        check_graph(
            model,
            t,
            batch_size=request.batch_size,
            precision=request.precision,
            backend=request.backend or "cuda",
            with_peak_tensors=request.with_peak_tensors,
            with_speed=request.with_speed,
        )
        for t in request.targets
    )
    ranked: tuple[Ranked[PrecisionEstimate], ...] = ()
    if request.catalog is not None:
        archs = dict(request.catalog.architectures)

        def row(card: Card) -> Ranked[PrecisionEstimate]:
            return graph_row(
                model, archs, card, batch_size=request.batch_size, precision=request.precision
            )

        ranked = tuple(collector_paused(rank_cards)(request.catalog.cards, row, request.budget_usd))
    return FitAnswer(model, checks, ranked)


def _check_transformer(
    spec: TransformerSpec, request: FitRequest[TransformerSpec]
) -> FitAnswer[TransformerCheck, Ranked[Estimate]]:
    wl = request.workload or spec.workload
    if request.backend is not None and request.backend != wl.backend:
        wl = replace(wl, backend=request.backend)
    if wl is not spec.workload:
        spec = replace(spec, workload=wl)
    allow = request.allow_longer_context or spec.allow_longer_context
    checks = tuple(
        TransformerCheck(spec, t, mark_longer_context(estimate(spec.model, wl, t), allow))
        for t in request.targets
    )
    ranked: tuple[Ranked[Estimate], ...] = ()
    if request.catalog is not None:
        archs = dict(request.catalog.architectures)

        def row(card: Card) -> Ranked[Estimate]:
            return transformer_row(spec.model, wl, archs, card, pick=request.pick)

        ranked = tuple(rank_cards(request.catalog.cards, row, request.budget_usd))
    return FitAnswer(spec, checks, ranked, wl)
