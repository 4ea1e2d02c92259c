"""What any front-end that describes its model by phases and ops gives the engine.

The layer walk (fit/graph) and the PyTorch trace (fit/torch) both end in the same two
things: the moments of a step as `Phase`s (fixed + per-sample `Parts`) in a precision,
and the step as roofline `Op`s at a batch. The check (peak, verdict, largest batch,
precision advice, speed), the ranking row, the JSON and the text are then the same
code for every such front-end (fit/graph/estimate.py `check`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from gputui.fit.core.breakdown import Phase
from gputui.fit.core.overheads import Backend
from gputui.fit.core.precision import Precision
from gputui.fit.core.roofline import Compiled, Op
from gputui.fit.core.software import Software


@runtime_checkable
class PhasedModel(Protocol):
    """A model described by its phases and ops (the names ModelSpec also answers to)."""

    @property
    def name(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def mode(self) -> str: ...
    @property
    def optimizer(self) -> str: ...
    @property
    def batch_size(self) -> int: ...
    @property
    def params(self) -> int: ...
    @property
    def trainable_params(self) -> int: ...
    @property
    def flops(self) -> int:
        """Forward FLOPs per sample."""
        ...

    @property
    def warnings(self) -> tuple[str, ...]: ...
    @property
    def precision(self) -> str | None: ...
    @property
    def software(self) -> Software: ...
    @property
    def runtime(self) -> str:
        """What runs the model (fit/graph/runtime.py's names), for the assumptions."""
        ...

    @property
    def runtime_source(self) -> str:
        """Why that runtime was assumed."""
        ...

    @property
    def precisions(self) -> tuple[str, ...]:
        """The precisions this description can be estimated in."""
        ...

    @property
    def convolutions(self) -> bool: ...

    def phases(self, p: Precision, backend: Backend) -> list[Phase]:
        """Every moment of one step in precision `p` on `backend`."""
        ...

    def step_ops(self, precision: str, batch: int) -> tuple[Sequence[Op], Compiled]:
        """One step as roofline ops at `batch`, with their compiled form."""
        ...

    def facts(self) -> dict[str, Any]:
        """The kind's own facts for the JSON document (a layer table, a trace summary)."""
        ...
