"""A layer model on a GPU: every precision's peak, verdict and largest batch (and speed).

The layer walk (memory.py) gives each moment's tensor bytes; the core adds what
a CUDA process pays on top (fit/core/overheads.py), decides the verdict
(fit/core/verdict.py) and solves the largest batch (fit/core/batch.py). Speed is
graph/step_ops.py, the ranking of catalog cards graph/ranking.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from gputui.fit.core.batch import largest_batch
from gputui.fit.core.breakdown import LAYER_ITEMS, Breakdown, Overheads, Parts, Phase
from gputui.fit.core.overheads import (
    ALLOCATOR_SLACK,
    Backend,
    cuda_context_bytes,
    library_workspace_bytes,
)
from gputui.fit.core.phased import PhasedModel
from gputui.fit.core.precision import (
    Computed,
    Precision,
    PrecisionOption,
    fastest_that_fits,
    policy,
    precision_options,
    recommend,
)
from gputui.fit.core.precision_names import PRECISIONS
from gputui.fit.core.speed import Speed
from gputui.fit.core.target import Target
from gputui.fit.core.verdict import Answer, Verdict, verdict
from gputui.fit.graph.gcpause import collector_paused
from gputui.fit.graph.memory import LiveTensor, live_at_peak, model_phases
from gputui.fit.graph.spec import ModelSpec
from gputui.fit.graph.step_ops import model_speed

MAX_BATCH_CAP = 1 << 24


@dataclass(frozen=True, slots=True)
class MemoryModel:
    """A model's phases in one precision, plus the per-process overheads."""

    phases: tuple[Phase, ...]
    cuda_context: int
    allocator_slack: float

    def breakdown(self, batch: int) -> tuple[str, Breakdown]:
        over = Overheads(self.cuda_context, self.allocator_slack)
        best: tuple[str, Breakdown] | None = None
        for phase in self.phases:
            b = over.breakdown(phase.at(batch), LAYER_ITEMS)
            if best is None or b.total > best[1].total:
                best = (phase.name, b)
        assert best is not None
        return best

    def peak_bytes(self, batch: int) -> int:
        return self.breakdown(batch)[1].total

    def max_batch(self, limit: int) -> int:
        """The largest batch whose peak is within `limit` bytes (0 if none)."""
        return largest_batch(
            ((ph.fixed.total, ph.per_sample.total) for ph in self.phases),
            limit,
            self.peak_bytes,
            scale=1 + self.allocator_slack,
            context=self.cuda_context,
            cap=MAX_BATCH_CAP,
        )


def memory_model(
    model: ModelSpec | PhasedModel,
    precision: str,
    cc: str | None = None,
    backend: Backend = "cuda",
) -> MemoryModel:
    """The phases of `model` in `precision`, with the overheads of `backend` on a GPU of `cc`."""
    p = policy(precision)
    if isinstance(model, ModelSpec):
        phases = cached_envelope(model, p, backend)
    else:
        phases = phased_envelope(model, p, backend)
    if backend == "cuda":
        lib = Parts(workspace=library_workspace_bytes(cc))
        phases = [Phase(ph.name, ph.fixed + lib, ph.per_sample) for ph in phases]
        return MemoryModel(tuple(phases), cuda_context_bytes(cc), ALLOCATOR_SLACK)
    return MemoryModel(tuple(phases), 0, 0.0)


# The walk depends on a precision only through its byte sizes (fp32 and tf32 walk
# alike, so do amp_fp16/amp_bf16 and bf16/fp16), and ranking every catalog card
# checks one model again and again: walks are cached per model and byte sizes.
_CACHE: dict[tuple[int, tuple[int, ...], str, str], tuple[ModelSpec, list[Phase]]] = {}
_CACHE_SIZE = 64


def cached_phases(model: ModelSpec, p: Precision, backend: Backend) -> list[Phase]:
    key = (
        id(model),
        (p.weight_bytes, p.grad_bytes, p.state_bytes, p.low_copy_bytes, p.act_bytes, p.training),
        backend,
        model.mode,
    )
    hit = _CACHE.get(key)
    if hit is not None and hit[0] is model:
        return hit[1]
    phases = model_phases(model, p, backend)
    if len(_CACHE) >= _CACHE_SIZE:
        _CACHE.clear()
    _CACHE[key] = (model, phases)
    return phases


_ENVELOPES: dict[int, tuple[list[Phase], list[Phase]]] = {}


def cached_envelope(model: ModelSpec, p: Precision, backend: Backend) -> list[Phase]:
    phases = cached_phases(model, p, backend)
    hit = _ENVELOPES.get(id(phases))
    if hit is not None and hit[0] is phases:
        return hit[1]
    if len(_ENVELOPES) >= _CACHE_SIZE:
        _ENVELOPES.clear()
    hull = envelope(phases)
    _ENVELOPES[id(phases)] = (phases, hull)
    return hull


def phased_envelope(model: PhasedModel, p: Precision, backend: Backend) -> list[Phase]:
    """The envelope of a phased front-end's phases (which caches its own phases)."""
    phases = model.phases(p, backend)
    hit = _ENVELOPES.get(id(phases))
    if hit is not None and hit[0] is phases:
        return hit[1]
    if len(_ENVELOPES) >= _CACHE_SIZE:
        _ENVELOPES.clear()
    hull = envelope(phases)
    _ENVELOPES[id(phases)] = (phases, hull)
    return hull


def envelope(phases: list[Phase]) -> list[Phase]:
    """The phases that are the largest at some batch >= 1 (the rest can never be the peak).

    Every phase is a line `fixed + per_sample * b`; their upper envelope over b >= 1 is
    a handful of lines, so the peak and the largest batch are found on those alone.
    Among equal lines the first is kept, as a scan of all phases would report it.
    """
    lines: dict[tuple[float, float], Phase] = {}
    for ph in phases:
        lines.setdefault((ph.per_sample.total, ph.fixed.total), ph)
    # by slope, then intercept; at b = 1 the highest line starts the envelope
    ordered = sorted(lines.items(), key=lambda kv: (kv[0][0], kv[0][1]))
    hull: list[tuple[tuple[float, float], Phase]] = []
    for (slope, icpt), ph in ordered:
        while hull:
            (s0, i0), _ = hull[-1]
            if s0 == slope or s0 + i0 <= slope + icpt:
                hull.pop()  # never above the new line at any b >= 1
                continue
            if len(hull) >= 2:
                (s1, i1), _ = hull[-2]
                # hull[-1] is needed only if it beats both neighbours somewhere
                # x where hull[-2] meets the new line vs where hull[-2] meets hull[-1]
                if (icpt - i1) * (s0 - s1) >= (i0 - i1) * (slope - s1):
                    hull.pop()
                    continue
            break
        hull.append(((slope, icpt), ph))
    kept = {id(ph) for _, ph in hull}
    return [ph for ph in phases if id(ph) in kept]


@dataclass(frozen=True, slots=True)
class PrecisionEstimate(Answer):
    precision: str
    offered: bool
    reason: str
    batch_size: int
    peak_phase: str
    breakdown: Breakdown
    limit_bytes: int
    verdict: Verdict
    max_batch_size: int
    free_bytes: int | None = None
    verdict_free: Verdict | None = None
    max_batch_size_free: int | None = None
    speed: Speed | None = None


@dataclass(frozen=True, slots=True)
class ModelCheck:
    model: ModelSpec | PhasedModel
    target: Target
    mode: str
    batch_size: int
    recommended: str
    recommended_reason: str
    estimates: tuple[PrecisionEstimate, ...] = field(default=())
    backend: Backend = "cuda"
    # the activation tensors alive at the recommended precision's peak, by layer
    peak_tensors: tuple[LiveTensor, ...] = field(default=())

    def estimate_for(self, precision: str) -> PrecisionEstimate | None:
        return next((e for e in self.estimates if e.precision == precision), None)

    @property
    def chosen(self) -> PrecisionEstimate:
        """The recommended precision's estimate (or the only one when one was asked for)."""
        found = self.estimate_for(self.recommended)
        return found if found is not None else self.estimates[0]


@collector_paused
def check(
    model: ModelSpec | PhasedModel,
    target: Target,
    *,
    batch_size: int | None = None,
    precision: str | None = None,
    backend: Backend = "cuda",
    with_peak_tensors: bool = False,
    with_speed: bool = True,
) -> ModelCheck:
    """Every precision that applies (or just `precision`) for `model` on `target`.

    `model` is a layer model or any front-end that gives phases and ops (PhasedModel):
    the check is the same for both.

    `with_speed=False` leaves every `speed` None: for callers that show only memory
    (the dashboard's fit line), no roofline profile is built or cached.
    """
    mode = model.mode
    batch = batch_size or model.batch_size
    arch = target.architecture
    cc = target.cc
    options: dict[str, PrecisionOption] = {
        o.name: o for o in precision_options(arch, mode, target.card)
    }
    rec_name, why = recommend(arch, mode, target.card)
    rec: str = rec_name
    known = PRECISIONS if isinstance(model, ModelSpec) else model.precisions
    wanted = (
        [precision]
        if precision
        else [n for n in PRECISIONS if n in known and (policy(n).training or mode != "train")]
    )
    estimates = []
    for name in wanted:
        option = options[name]
        mm = memory_model(model, name, cc, backend)
        phase, breakdown = mm.breakdown(batch)
        limit = target.memory_total
        est = PrecisionEstimate(
            precision=name,
            offered=option.offered,
            reason=option.reason,
            batch_size=batch,
            peak_phase=phase,
            breakdown=breakdown,
            limit_bytes=limit,
            verdict=verdict(breakdown.total, limit),
            max_batch_size=mm.max_batch(limit),
            speed=(
                model_speed(model, target.card, name, batch, mode, arch)
                if target.card and with_speed
                else None
            ),
        )
        if target.memory_free is not None:
            free = target.memory_free
            est = _with_free(est, free, verdict(breakdown.total, free), mm.max_batch(free))
        estimates.append(est)
    if precision:
        rec, why = precision, options[precision].reason
    elif model.precision in options:  # the file's own policy (Keras mixed_float16): the user's
        rec, why = model.precision, f"the model file's own policy: {options[model.precision].reason}"
    elif with_speed:
        rec, why = _by_speed(rec, why, mode, estimates)
    live: tuple[LiveTensor, ...] = ()
    if with_peak_tensors and isinstance(model, ModelSpec):
        live = tuple(live_at_peak(model, policy(rec), backend, batch, cached_phases)[1])
    return ModelCheck(model, target, mode, batch, rec, why, tuple(estimates), backend, live)


def _by_speed(
    rec: str, why: str, mode: str, estimates: list[PrecisionEstimate]
) -> tuple[str, str]:
    """recommend()'s choice, unless the roofline computed here says another safe precision
    that fits is faster (or the choice does not fit and another does): then that one."""
    rows = [
        Computed(
            e.precision,
            e.offered,
            e.verdict != "does not fit",
            e.speed.samples_per_s if e.speed is not None and e.speed.profile else None,
        )
        for e in estimates
    ]
    found = fastest_that_fits(rec, mode, rows)
    if found is None:
        return rec, why
    best, mine = found
    if mine is None or not mine.fits:
        return best.name, f"the fastest computed that fits ({rec} does not fit): {why}"
    chosen = next(e for e in estimates if e.precision == best.name)
    prof = chosen.speed.profile if chosen.speed is not None else None
    bound = f": the step is mostly {prof.bound}-bound at batch {chosen.batch_size}" if prof else ""
    return best.name, (
        f"the fastest computed that fits: {best.rate:,.0f} samples/s against {mine.rate:,.0f} "
        f"for {rec} (its tensor cores do not pay here{bound})"
    )


def _with_free(est: PrecisionEstimate, free: int, v: Verdict, max_b: int) -> PrecisionEstimate:
    return replace(est, free_bytes=free, verdict_free=v, max_batch_size_free=max_b)
