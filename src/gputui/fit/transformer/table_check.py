"""A models-file transformer checked on one GPU, shaped like the layer estimator's ModelCheck.

The Fit screen lays out rows of `model x GPU` with the verdict now and on total,
the largest batch, a precision and the peak; `TransformerCheck` answers those
under the same names (`chosen`, `recommended`, `target`, `model.name`), so one
table loop and one worker pass serve both estimators. The transformer's
workload is its table's (fit/transformer/table.py); nothing here is tuned for the screen.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from gputui.fit.transformer.estimate import Estimate, Ranked, estimate, rank_cards
from gputui.fit.transformer.overheads import Target
from gputui.fit.transformer.table import TransformerSpec
from gputui.fit.transformer.workload import Backend

if TYPE_CHECKING:
    from gputui.catalog import Catalog


@dataclass(frozen=True, slots=True)
class TransformerCheck:
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


def check_transformer(
    spec: TransformerSpec, target: Target, backend: Backend = "cuda"
) -> TransformerCheck:
    wl = spec.workload
    if backend != wl.backend:
        wl = replace(wl, backend=backend)
    return TransformerCheck(spec, target, estimate(spec.model, wl, target))


def rank_transformer(spec: TransformerSpec, catalog: Catalog) -> list[Ranked]:
    """Every catalog card for the table's workload, with the cards it would need."""
    return rank_cards(spec.model, spec.workload, catalog.cards, dict(catalog.architectures))
