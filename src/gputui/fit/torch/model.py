"""A traced PyTorch model as the engine reads it (fit.core.phased.PhasedModel).

Traces are made when the engine first asks for a precision (one per way of running
it, trace.TRACE_AS) and backend, at two batch sizes: each moment's bytes per category
at batch b1 and b2 give its fixed and per-sample parts. Where the moments of the two
traces do not line up, or a category shrinks as the batch grows, memory is not affine
in the batch there: a third trace at a larger batch is fitted instead, and a warning
says so.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from gputui.fit.core.breakdown import Parts, Phase
from gputui.fit.core.overheads import Backend
from gputui.fit.core.precision import Precision, policy
from gputui.fit.core.roofline import Compiled, Op, compile_ops, tensor_aligned
from gputui.fit.core.software import DEFAULT_SOFTWARE, Software
from gputui.fit.torch.allocator import cuda_block_bytes
from gputui.fit.torch.spec import TorchSpec
from gputui.fit.torch.timeline import Timeline
from gputui.fit.torch.trace import TRACE_AS, Facts, UserCode, trace_step

_PARTS = {
    "parameters": "weights",
    "gradients": "gradients",
    "optimizer_state": "optimizer_state",
    "activations": "activations",
    "temporaries": "workspace",
}
_PASS = {"forward": "forward", "loss": "forward", "backward": "backward_input",
         "optimizer": "optimizer"}  # fmt: skip


@dataclass(frozen=True, slots=True)
class Traced:
    """One way of running the model traced at two batch sizes."""

    batches: tuple[int, int]
    timelines: tuple[Timeline, Timeline]
    facts: Facts


@dataclass(eq=False)
class TracedModel:
    """The user's module, traced on demand; answers PhasedModel's names."""

    spec: TorchSpec
    code: UserCode
    backend: str = "cuda"  # which backend's traces describe the model (params, FLOPs, ops)
    kind: str = "torch"
    runtime: str = "pytorch"  # traced as PyTorch eager runs it
    runtime_source: str = "a PyTorch module, traced"
    software: Software = DEFAULT_SOFTWARE
    _traces: dict[tuple[str, str], Traced] = field(default_factory=dict)
    _phases: dict[tuple[str, str, str], list[Phase]] = field(default_factory=dict)
    _ops: dict[tuple[str, int], tuple[tuple[Op, ...], Compiled]] = field(default_factory=dict)
    _warnings: list[str] = field(default_factory=list)

    # -- the description
    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def mode(self) -> str:
        return self.spec.mode

    @property
    def optimizer(self) -> str:
        return self.spec.optimizer

    @property
    def batch_size(self) -> int:
        return self.spec.batch_size

    @property
    def precision(self) -> str | None:
        return self.spec.precision

    @property
    def precisions(self) -> tuple[str, ...]:
        return tuple(TRACE_AS)

    @property
    def _first(self) -> Traced:
        return self.traced("fp32", self.backend)

    @property
    def params(self) -> int:
        return self._first.facts.params

    @property
    def trainable_params(self) -> int:
        return self._first.facts.trainable_params

    @property
    def flops(self) -> int:
        """Forward FLOPs per sample, from the fp32 trace's forward ops."""
        t = self._first
        (b1, b2), (t1, t2) = t.batches, t.timelines
        f1 = sum(o.flops for o in t1.ops if o.stage == "forward" and o.op_class == "matmul")
        f2 = sum(o.flops for o in t2.ops if o.stage == "forward" and o.op_class == "matmul")
        return max(int((f2 - f1) / (b2 - b1)), 0)

    @property
    def convolutions(self) -> bool:
        return self._first.facts.convolutions

    @property
    def warnings(self) -> tuple[str, ...]:
        self._first  # noqa: B018 - the warnings of the first trace
        return tuple(dict.fromkeys(self._warnings))

    def facts(self) -> dict[str, Any]:
        f = self._first.facts
        return {
            "factory": self.spec.factory,
            "loss": f.loss_from if self.mode != "inference" else None,
            "modules": f.modules,
            "traced_batches": list(self._first.batches),
        }

    # -- tracing
    def traced(self, precision: str, backend: str) -> Traced:
        kind = TRACE_AS[precision]
        key = (kind, backend)
        hit = self._traces.get(key)
        if hit is not None:
            return hit
        b1 = max(self.spec.batch_size, 1)
        b2 = 2 * b1
        t1, facts = trace_step(self.spec, self.code, b1, kind, backend)
        t2, _ = trace_step(self.spec, self.code, b2, kind, backend)
        if not _affine(t1, t2):
            b3 = 4 * b1
            t3, _ = trace_step(self.spec, self.code, b3, kind, backend)
            if _affine(t2, t3):
                self._warnings.append(
                    f"memory is not affine in the batch between {b1} and {b2}: fitted on the "
                    f"traces at {b2} and {b3}"
                )
                t1, t2, b1, b2 = t2, t3, b2, b3
            else:
                self._warnings.append(
                    f"memory is not affine in the batch (traces at {b1}, {b2}, {b3}): each "
                    "moment's peak is fitted between the traces at batch "
                    f"{b1} and {b2}; the largest batch is a rough figure"
                )
        self._warnings += t1.notes
        traced = Traced((b1, b2), (t1, t2), facts)
        self._traces[key] = traced
        return traced

    # -- what the engine asks
    def phases(self, p: Precision, backend: Backend) -> list[Phase]:
        key = (TRACE_AS[p.name], backend, p.name if p.name in ("fp32", "tf32") else "")
        hit = self._phases.get(key)
        if hit is not None:
            return hit
        t = self.traced(p.name, backend)
        rounding = cuda_block_bytes if backend == "cuda" else None
        phases = _fit(t, rounding)
        self._phases[key] = phases
        return phases

    def step_ops(self, precision: str, batch: int) -> tuple[Sequence[Op], Compiled]:
        key = (precision, batch)
        hit = self._ops.get(key)
        if hit is not None:
            return hit
        t = self.traced(precision, self.backend)
        ops = tuple(_ops_at(t, policy(precision), batch))
        found = (ops, compile_ops(ops))
        self._ops[key] = found
        return found


def _affine(t1: Timeline, t2: Timeline) -> bool:
    """Whether the two traces' moments line up and no category shrinks as the batch grows."""
    if t1.labels != t2.labels:
        return False
    a, b = t1.totals(), t2.totals()
    return all(b[i][c] >= a[i][c] for i in range(len(a)) for c in a[i])


def _fit(t: Traced, rounding: Any) -> list[Phase]:
    (b1, b2), (t1, t2) = t.batches, t.timelines
    a, b = t1.totals(rounding), t2.totals(rounding)
    labels = t1.labels[t1.first_moment :]
    if len(a) != len(b):  # not aligned: the peaks of the two traces, as one line
        a = [max(a, key=lambda d: sum(d.values()))]
        b = [max(b, key=lambda d: sum(d.values()))]
        labels = ["step peak"]
    phases = []
    for label, x, y in zip(labels, a, b, strict=False):
        per = {_PARTS[c]: max((y[c] - x[c]) / (b2 - b1), 0.0) for c in x}
        fixed = {_PARTS[c]: max(x[c] - per[_PARTS[c]] * b1, 0.0) for c in x}
        phases.append(Phase(label, Parts(**fixed), Parts(**per)))
    return phases


def _ops_at(t: Traced, p: Precision, batch: int) -> list[Op]:
    (b1, b2), (t1, t2) = t.batches, t.timelines
    ops1, ops2 = t1.ops, t2.ops
    if len(ops1) != len(ops2):
        ops2 = ops1  # not aligned: the first trace's ops, scaled by the batch
        scale = batch / b1
    else:
        scale = 0.0
    modules: dict[str, int] = {}
    out = []
    for o1, o2 in zip(ops1, ops2, strict=True):
        if scale:
            flops, nbytes = o1.flops * scale, o1.bytes * scale
        else:
            k = (batch - b1) / (b2 - b1)
            flops = max(o1.flops + (o2.flops - o1.flops) * k, 0.0)
            nbytes = max(o1.bytes + (o2.bytes - o1.bytes) * k, 0.0)
        layer = modules.setdefault(o1.module, len(modules)) if o1.module else None
        out.append(
            Op(
                o1.name,
                o1.op_class,  # type: ignore[arg-type]
                _PASS.get(o1.stage, "forward"),  # type: ignore[arg-type]
                flops,
                nbytes,
                tensor_cores=o1.op_class == "matmul"
                and p.tensor_key is not None
                and tensor_aligned(p, *o1.dims),
                layer=layer if o1.stage != "optimizer" else None,
                label=o1.module,
            )
        )
    return out
