"""A transformer as the models TOML describes it: the model, its workload, and which of
the workload's keys the table set (the transformer front-end's description, as
fit/graph/spec.py's ModelSpec is the layer graph's)."""

from __future__ import annotations

from dataclasses import dataclass

from gputui.fit.transformer.model import TransformerModel
from gputui.fit.transformer.workload import Workload


@dataclass(frozen=True, slots=True)
class TransformerSpec:
    """A models-file transformer: the model, its workload, and which workload keys the table set."""

    name: str
    model: TransformerModel
    workload: Workload
    given: frozenset[str] = frozenset()
    allow_longer_context: bool = False  # the table's opt-in to a context beyond the model's

    @property
    def mode(self) -> str:
        return self.workload.mode

    @property
    def batch_size(self) -> int:
        return self.workload.batch_size
