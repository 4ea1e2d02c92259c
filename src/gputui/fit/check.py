"""The one entry to the fit engine: `check(spec, target)` for any model kind.

The CLI, the Fit screen, the dashboard's fit line, the exporter and the cluster
call this rather than an engine: a layer model (ModelSpec) goes to the graph
engine, a models-file transformer (TransformerSpec) to the transformer engine.
Both answer under the same names (`chosen`, `estimates`, `recommended`,
`target`, `model.name`), so one table loop and one worker pass serve both.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, TypedDict, overload

from gputui.fit.core.overheads import Backend
from gputui.fit.core.target import Target
from gputui.fit.graph.estimate import ModelCheck
from gputui.fit.graph.estimate import check as check_graph
from gputui.fit.graph.ranking import Ranked
from gputui.fit.graph.ranking import rank_cards as rank_graph
from gputui.fit.graph.spec import ModelSpec
from gputui.fit.transformer.estimate import Estimate, estimate
from gputui.fit.transformer.ranking import Ranked as TransformerRanked
from gputui.fit.transformer.ranking import rank_cards as rank_transformer_cards
from gputui.fit.transformer.table import TransformerSpec

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from gputui.catalog import Catalog

__all__ = [
    "CheckOptions",
    "ModelCheck",
    "Ranked",
    "Target",
    "TransformerCheck",
    "TransformerRanked",
    "check",
    "check_transformer",
    "rank",
    "rank_transformer",
]


@dataclass(frozen=True, slots=True)
class TransformerCheck:
    """A models-file transformer on one GPU, answering under ModelCheck's names."""

    model: TransformerSpec
    target: Target
    estimate: Estimate

    @property
    def chosen(self) -> Estimate:
        """The estimate the row shows (a transformer has one: its table's workload)."""
        return self.estimate

    @property
    def estimates(self) -> tuple[Estimate, ...]:
        """Like ModelCheck.estimates (one per precision): a transformer has its table's one."""
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


class CheckOptions(TypedDict, total=False):
    """check()'s keyword options, as fit.graph.estimate.check takes them (and defaults
    them there): named once, for both overloads and the forwarding call."""

    batch_size: int | None
    precision: str | None
    backend: Backend
    with_peak_tensors: bool
    with_speed: bool


@overload
def check(spec: ModelSpec, target: Target, **options: Unpack[CheckOptions]) -> ModelCheck: ...


@overload
def check(
    spec: TransformerSpec, target: Target, **options: Unpack[CheckOptions]
) -> TransformerCheck: ...


def check(
    spec: ModelSpec | TransformerSpec, target: Target, **options: Unpack[CheckOptions]
) -> ModelCheck | TransformerCheck:
    """`spec` on `target`: every precision that applies for a layer model (or just
    `precision`); a transformer's table workload (its own batch and precision).

    `with_speed=False` leaves a layer model's speeds None (callers that show only
    memory); `batch_size`, `precision` and `with_peak_tensors` are the layer
    model's: a transformer's workload names its own.
    """
    if isinstance(spec, TransformerSpec):
        return check_transformer(spec, target, options.get("backend", "cuda"))
    return check_graph(spec, target, **options)


def check_transformer(
    spec: TransformerSpec, target: Target, backend: Backend = "cuda"
) -> TransformerCheck:
    """A models-file transformer's table workload on `target` (on `backend`)."""
    wl = spec.workload
    if backend != wl.backend:
        wl = replace(wl, backend=backend)
    return TransformerCheck(spec, target, estimate(spec.model, wl, target))


@overload
def rank(spec: ModelSpec, catalog: Catalog) -> list[Ranked]: ...


@overload
def rank(spec: TransformerSpec, catalog: Catalog) -> list[TransformerRanked]: ...


def rank(
    spec: ModelSpec | TransformerSpec, catalog: Catalog
) -> list[Ranked] | list[TransformerRanked]:
    """Every catalog card for `spec`, those that fit first (see each engine's ranking)."""
    if isinstance(spec, TransformerSpec):
        return rank_transformer(spec, catalog)
    return rank_graph(spec, catalog.cards, dict(catalog.architectures))


def rank_transformer(spec: TransformerSpec, catalog: Catalog) -> list[TransformerRanked]:
    """Every catalog card for the table's workload, with the cards it would need."""
    return rank_transformer_cards(
        spec.model, spec.workload, catalog.cards, dict(catalog.architectures)
    )
