"""From a model and a GPU to numbers: peak memory, largest batch, verdict, rough speed.

The memory model (memory.py) gives tensor bytes; this adds what a CUDA process
pays on top (the context, the cuBLAS workspace, the caching allocator's slack),
decides fits / tight / does not fit, solves the largest batch exactly, and turns
FLOPs into an explicitly rough step time.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Literal

from gputui.catalog.models import Architecture, Card
from gputui.fit.core.mig import MigSlot
from gputui.fit.core.precision import (
    PRECISIONS,
    Precision,
    PrecisionOption,
    policy,
    precision_options,
    recommend,
)
from gputui.fit.core.roofline import Profile, missing_figure
from gputui.fit.graph.memory import Backend, LiveTensor, Parts, Phase, live_at_peak, model_phases
from gputui.fit.graph.speed import profile as roofline_profile
from gputui.fit.modelsfile import ModelSpec

Verdict = Literal["fits", "tight", "does not fit"]
TIGHT_MARGIN = 0.10  # within 10 % of the limit is "tight"
ALLOCATOR_SLACK = 0.05  # PyTorch's caching allocator rounds blocks up and fragments
# Fraction of the datasheet peak a training/inference step reaches. Dense and conv
# layers in frameworks typically reach 30-60 %; recurrent and small layers less.
EFFICIENCY = 0.4
# Each layer costs at least a few kernel launches per pass whatever its size:
# this keeps tiny models from being credited millions of samples per second.
LAUNCH_OVERHEAD_S = 10e-6  # per layer per pass (forward; training counts 3 passes)
MAX_BATCH_CAP = 1 << 24


def cuda_context_bytes(cc: str | None) -> int:
    """A CUDA context with PyTorch's kernels loaded lazily (CUDA >= 11.7 default).

    Typical figures reported by nvidia-smi for a fresh `torch.cuda.init()`; Hopper
    and newer load more module code.
    """
    major = _major(cc)
    if major is not None and major >= 9:
        return 512 * 2**20
    if major is not None and major < 7:
        return 300 * 2**20
    return 400 * 2**20


def library_workspace_bytes(cc: str | None) -> int:
    """cuBLAS workspace PyTorch allocates through its allocator (32 MiB on Hopper+)."""
    major = _major(cc)
    return (32 if major is not None and major >= 9 else 8) * 2**20


def _major(cc: str | None) -> int | None:
    try:
        return int(str(cc).split(".")[0]) if cc else None
    except ValueError:
        return None


@dataclass(frozen=True, slots=True)
class Breakdown:
    weights: int
    gradients: int
    optimizer_state: int
    activations: int
    workspace: int
    cuda_context: int
    allocator: int

    @property
    def tensor_bytes(self) -> int:
        return (
            self.weights + self.gradients + self.optimizer_state + self.activations + self.workspace
        )

    @property
    def total(self) -> int:
        return self.tensor_bytes + self.cuda_context + self.allocator

    def as_dict(self) -> dict[str, int]:
        return {
            "weights": self.weights,
            "gradients": self.gradients,
            "optimizer_state": self.optimizer_state,
            "activations": self.activations,
            "workspace": self.workspace,
            "cuda_context": self.cuda_context,
            "allocator": self.allocator,
        }


@dataclass(frozen=True, slots=True)
class MemoryModel:
    """A model's phases in one precision, plus the per-process overheads."""

    phases: tuple[Phase, ...]
    cuda_context: int
    allocator_slack: float

    def breakdown(self, batch: int) -> tuple[str, Breakdown]:
        best: tuple[str, Breakdown] | None = None
        for phase in self.phases:
            parts = phase.at(batch)
            b = self._wrap(parts)
            if best is None or b.total > best[1].total:
                best = (phase.name, b)
        assert best is not None
        return best

    def _wrap(self, parts: Parts) -> Breakdown:
        return Breakdown(
            parts.weights,
            parts.gradients,
            parts.optimizer_state,
            parts.activations,
            parts.workspace,
            self.cuda_context,
            int(parts.total * self.allocator_slack),
        )

    def peak_bytes(self, batch: int) -> int:
        return self.breakdown(batch)[1].total

    def max_batch(self, limit: int) -> int:
        """The largest batch whose peak is within `limit` bytes (0 if none)."""
        scale = 1 + self.allocator_slack
        best = MAX_BATCH_CAP
        for phase in self.phases:
            fixed = phase.fixed.total * scale + self.cuda_context
            per = phase.per_sample.total * scale
            if fixed > limit:
                return 0
            if per > 0:
                best = min(best, int((limit - fixed) // per))
        # integer rounding of the slack can move the answer by one either way
        while best > 0 and self.peak_bytes(best) > limit:
            best -= 1
        while best < MAX_BATCH_CAP and self.peak_bytes(best + 1) <= limit:
            best += 1
        return best


def memory_model(
    model: ModelSpec, precision: str, cc: str | None = None, backend: Backend = "cuda"
) -> MemoryModel:
    p = policy(precision)
    phases = cached_envelope(model, p, backend)
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


def envelope(phases: list[Phase]) -> list[Phase]:
    """The phases that are the largest at some batch >= 1 (the rest can never be the peak).

    Every phase is a line `fixed + per_sample * b`; their upper envelope over b >= 1 is
    a handful of lines, so the peak and the largest batch are found on those alone.
    Among equal lines the first is kept, as a scan of all phases would report it.
    """
    lines: dict[tuple[int, int], Phase] = {}
    for ph in phases:
        lines.setdefault((ph.per_sample.total, ph.fixed.total), ph)
    # by slope, then intercept; at b = 1 the highest line starts the envelope
    ordered = sorted(lines.items(), key=lambda kv: (kv[0][0], kv[0][1]))
    hull: list[tuple[tuple[int, int], Phase]] = []
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


def verdict(peak: int, limit: int) -> Verdict:
    if peak > limit:
        return "does not fit"
    if peak > limit * (1 - TIGHT_MARGIN):
        return "tight"
    return "fits"


def pow2_floor(n: int) -> int:
    return 0 if n < 1 else 1 << (n.bit_length() - 1)


def step_flops(model: ModelSpec, mode: str) -> int:
    """FLOPs of one step per sample: training is about 3x forward (backward is 2x)."""
    if mode != "train":
        gen = model.generator
        return gen.flops if gen is not None else model.flops
    if model.generator is not None and model.discriminator is not None:
        g, d = model.generator.flops, model.discriminator.flops
        # D: fakes (G forward), real and fake passes (3x D each); G: through D and G
        return 4 * g + 8 * d
    return 3 * model.flops


@dataclass(frozen=True, slots=True)
class Speed:
    peak_tflops: float  # datasheet figure used
    step_time_s: float
    samples_per_s: float
    basis: str = "fp32"  # which figure: "bf16 tensor", "fp32 rate (no tf32 tensor cores ...)"
    derived: bool = False  # that figure is derived in the catalog by an architecture rule
    # the roofline behind the figure (fit.roofline): per-op bounds, shares, per-layer
    # bounds; None when the card lacks a bandwidth figure and FLOPs alone were used
    profile: Profile | None = None


def speed(
    model: ModelSpec,
    card: Card,
    precision: str,
    batch: int,
    mode: str,
    architecture: Architecture | None = None,
) -> Speed | None:
    """Rough: the roofline step time (fit.roofline). None without a figure.

    The peak is the figure the precision really runs at on this card (see
    fit.throughput.rate): an unknown tensor figure gives None, never a slower
    precision's rate passed off as this one's. A card without a bandwidth figure
    falls back to FLOPs / (peak x EFFICIENCY) + launch overhead.
    """
    from gputui.fit.core.throughput import rate

    found = rate(card, architecture, precision)
    if found.tflops is None:
        return None
    # how the framework runs it (layout, optimizer kernels): the models file's or the CLI's
    prof = roofline_profile(model, card, architecture, precision, batch, mode, model.software)
    if prof is None:
        return _speed_at(model, found.tflops, batch, mode, found.basis, found.derived)
    derived = found.derived or prof.ceilings.derived
    return Speed(found.tflops, prof.step_time_s, prof.samples_per_s, found.basis, derived, prof)


def _speed_at(
    model: ModelSpec, tflops: float, batch: int, mode: str, basis: str, derived: bool
) -> Speed:
    flops = step_flops(model, mode) * batch
    layers = sum(len(n.layers) for n in model.networks)
    passes = 3 if mode == "train" else 1
    seconds = flops / (tflops * 1e12 * EFFICIENCY) + layers * passes * LAUNCH_OVERHEAD_S
    return Speed(tflops, seconds, batch / seconds if seconds > 0 else math.inf, basis, derived)


@dataclass(frozen=True, slots=True)
class PrecisionEstimate:
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

    @property
    def peak_bytes(self) -> int:
        return self.breakdown.total

    @property
    def fits(self) -> bool:
        return self.verdict != "does not fit"


@dataclass(frozen=True, slots=True)
class Target:
    """The GPU a model is checked against: a catalog card, or what NVML saw."""

    name: str
    memory_total: int
    architecture: Architecture | None = None
    card: Card | None = None
    compute_capability: str | None = None
    memory_free: int | None = None  # right now, other processes included (installed GPUs)
    index: int | None = None  # NVML index for installed GPUs
    mig: MigSlot | None = None  # a MIG instance of GPU `index` (memory is the instance's)


@dataclass(frozen=True, slots=True)
class ModelCheck:
    model: ModelSpec
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


def check(
    model: ModelSpec,
    target: Target,
    *,
    batch_size: int | None = None,
    precision: str | None = None,
    backend: Backend = "cuda",
    with_peak_tensors: bool = False,
    with_speed: bool = True,
) -> ModelCheck:
    """Every precision that applies (or just `precision`) for `model` on `target`.

    `with_speed=False` leaves every `speed` None: for callers that show only memory
    (the dashboard's fit line), no roofline profile is built or cached.
    """
    mode = model.mode
    batch = batch_size or model.batch_size
    arch = target.architecture
    cc = target.compute_capability or (target.card.compute_capability if target.card else None)
    options: dict[str, PrecisionOption] = {
        o.name: o for o in precision_options(arch, mode, target.card)
    }
    rec_name, why = recommend(arch, mode, target.card)
    rec: str = rec_name
    wanted = (
        [precision]
        if precision
        else [n for n in PRECISIONS if policy(n).training or mode != "train"]
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
                speed(model, target.card, name, batch, mode, arch)
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
    live: tuple[LiveTensor, ...] = ()
    if with_peak_tensors:
        live = tuple(live_at_peak(model, policy(rec), backend, batch, cached_phases)[1])
    return ModelCheck(model, target, mode, batch, rec, why, tuple(estimates), backend, live)


def _with_free(est: PrecisionEstimate, free: int, v: Verdict, max_b: int) -> PrecisionEstimate:
    return replace(est, free_bytes=free, verdict_free=v, max_batch_size_free=max_b)


@dataclass(frozen=True, slots=True)
class Ranked:
    card: Card
    precision: str
    estimate: PrecisionEstimate
    unknown_reason: str | None = None  # why the speed is unknown (the figure it would need)
    lower_bound: Speed | None = None  # a known floor used to place an unknown card

    @property
    def samples_per_s(self) -> float | None:
        """The roofline's figure; None where the card's figures allow no roofline (an
        estimate by another method must not be ranked against roofline ones)."""
        s = self.estimate.speed
        return s.samples_per_s if s is not None and s.profile is not None else None

    @property
    def samples_per_s_per_dollar(self) -> float | None:
        """Per launch dollar: only cards with a published USD launch price (MSRP)."""
        s = self.samples_per_s
        price = self.card.launch_price_usd
        return s / price if s is not None and price else None


def rank_cards(
    model: ModelSpec,
    cards: tuple[Card, ...],
    architectures: dict[str, Architecture],
    *,
    batch_size: int | None = None,
    precision: str | None = None,
) -> list[Ranked]:
    """The model on every card in its recommended precision: fitting cards first, fastest first.

    A card whose figure for that precision is unknown keeps speed None (shown as
    "unknown") and is placed by what is known of it, a rate it is sure to reach (see
    fit.throughput), rather than as zero; with no floor either it goes after the cards
    of its verdict.
    """
    from gputui.fit.core.precision import recommend as recommend_for_card
    from gputui.fit.core.throughput import rate

    out = []
    for card in cards:
        arch = architectures.get(card.architecture)
        target = Target(card.name, card.memory_bytes, arch, card, card.compute_capability)
        name = precision or recommend_for_card(arch, model.mode, card)[0]
        result = check(model, target, batch_size=batch_size, precision=name)
        est = result.estimates[0]
        found = rate(card, arch, name)
        floor = None
        if found.tflops is None and found.lower_bound_tflops is not None:
            # The roofline at the floor rate: the card with that figure in place of the
            # unknown one (a rate it is sure to reach), so the floor is priced like the rest.
            assert found.figure is not None
            floored = card.model_copy(update={found.figure: found.lower_bound_tflops})
            floor = speed(model, floored, name, est.batch_size, model.mode, arch)
            if floor is not None:
                floor = replace(floor, basis=found.lower_bound_basis or "a floor", derived=False)
        reason = found.unknown_reason if found.tflops is None else None
        if reason is None and est.speed is not None and est.speed.profile is None:
            reason = (
                f"{missing_figure(card) or 'a figure missing'}, which the roofline needs "
                "for the ops tensor cores do not run"
            )
        out.append(Ranked(card, name, est, reason, floor))

    def key(r: Ranked) -> tuple[int, int, float, int]:
        known = r.samples_per_s
        floor = r.lower_bound.samples_per_s if r.lower_bound else None
        placed = known if known is not None else floor
        return (
            0 if r.estimate.fits else 1,
            0 if placed is not None else 1,
            -(placed or 0.0),
            -r.estimate.max_batch_size,
        )

    return sorted(out, key=key)
