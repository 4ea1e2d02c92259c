"""The one speed answer of every model kind, and the one policy for a card figure it lacks.

A front-end only turns its model into roofline ops (fit/graph/step_ops.py, a layer
model's step; fit/transformer/step_ops.py, a transformer's prefill, decode or training
step) and times them on a card (`Timing`); this module makes the `Speed` every report,
ranking and view reads, so the kinds cannot drift apart again:

- one efficiency policy: the roofline's per-op-class efficiencies (fit.core.roofline
  EFFICIENCY, per-kernel LAUNCH_S and HOST_S_PER_KERNEL). There is no FLOPs-only
  fallback: no catalog card has an FP32 figure without a bandwidth figure, and a
  FLOPs-only figure ignores the memory side that bounds most steps, so it would be a
  number of unknown error passed off as an estimate.
- one policy for a missing figure: where the card runs the precision (its tensor cores
  do) but the catalog lacks that figure, or lacks the FP32 or bandwidth figure the
  roofline needs, the speed is unknown, with the reason. Where a rate the card is sure
  to reach is known (fit.core.peak_rate's floor: its FP32 rate, or half its
  FP16-accumulate tensor rate), the same ops are timed at that rate as a `floor`, which
  a ranking places the card by and shows as such; it is never shown as the speed. No
  other precision's figure is ever substituted for the missing one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Literal

from gputui.catalog.models import Architecture, Card
from gputui.fit.core.peak_rate import Rate, rate
from gputui.fit.core.power import Unit
from gputui.fit.core.roofline import Bound, Profile, ceilings, missing_figure

# What a throughput measures: a layer model's whole "step" (samples/s), a transformer's
# "train" step, "prefill" (the prompt) or "decode" (generated tokens), all tokens/s.
Phase = Literal["step", "train", "prefill", "decode"]


@dataclass(frozen=True, slots=True)
class PhaseRate:
    """One phase's rough throughput on a card (in its Speed's unit per second)."""

    throughput: float
    bound: Bound  # what limits it: compute, memory or launch
    step_time_s: float  # one step (a batch; one decode step) of this phase
    bound_share: float | None = None  # the bound's share of the time, where known


@dataclass(frozen=True, slots=True)
class Timing:
    """What a front-end's op timer gives for one card: each phase it has, and extras."""

    phases: Mapping[Phase, PhaseRate]
    profile: Profile | None = None  # the per-op roofline behind a single-phase step
    decode_compute_bound_batch: int | None = None  # smallest batch whose decode is compute-bound
    basis: str = ""  # what the timing used beyond the card's figures (an interconnect)


@dataclass(frozen=True, slots=True)
class Speed:
    """Rough throughput of a model on one card (labelled rough wherever shown).

    `phases` is empty when the speed is unknown (`unknown_reason` says why); `floor` then
    holds each phase's throughput at a rate the card is sure to reach (`floor_basis`),
    where one is known."""

    unit: Unit
    precision: str  # the precision the roofline ran the ops in
    phases: Mapping[Phase, PhaseRate]
    basis: str  # the catalog figures used, e.g. "bf16 tensor 165 TFLOPS, ..., 1008 GB/s"
    peak_basis: str  # what the precision's peak is, e.g. "bf16 tensor", "fp32 rate (no ...)"
    derived: bool  # a figure used is derived by an architecture rule (catalog)
    peak_tflops: float | None  # the tensor (or FP32) peak the matmuls were timed at
    bandwidth_gbs: float | None
    profile: Profile | None = None
    decode_compute_bound_batch: int | None = None
    unknown_reason: str | None = None
    floor: Mapping[Phase, float] = field(default_factory=dict)
    floor_basis: str | None = None

    def throughput(self, phase: Phase) -> float | None:
        found = self.phases.get(phase)
        return found.throughput if found is not None else None

    def bound(self, phase: Phase) -> Bound | None:
        found = self.phases.get(phase)
        return found.bound if found is not None else None

    @property
    def samples_per_s(self) -> float | None:
        """A layer model's step throughput (None: unknown)."""
        return self.throughput("step")

    @property
    def step_time_s(self) -> float | None:
        found = self.phases.get("step") or self.phases.get("train")
        return found.step_time_s if found is not None else None

    @property
    def train_tokens_per_s(self) -> float | None:
        return self.throughput("train")

    @property
    def prefill_tokens_per_s(self) -> float | None:
        return self.throughput("prefill")

    @property
    def decode_tokens_per_s(self) -> float | None:
        """Generated tokens/s summed over the batch."""
        return self.throughput("decode")


def unknown_reason(found: Rate, card: Card) -> str:
    """Why a card's roofline speed is unknown: the precision's rate (`found`,
    fit.core.peak_rate) is unknown, or another figure the roofline needs is."""
    if found.tflops is None and found.unknown_reason:
        return found.unknown_reason
    return (
        f"{missing_figure(card) or 'a figure missing'}, which the roofline needs "
        "for the ops tensor cores do not run"
    )


def card_speed(
    card: Card,
    architecture: Architecture | None,
    precision: str,
    unit: Unit,
    time: Callable[[Card], Timing | None],
    *,
    accumulate16: bool = False,
) -> Speed:
    """The speed of the ops `time` runs on `card` in `precision`, under this module's policy.

    `time(card)` times the front-end's ops on a card (None where the roofline cannot);
    it is called on a copy of the card with the floor in place of a missing figure, so
    the floor is priced like every other figure. `accumulate16`: time matmuls at the
    FP16-accumulate tensor rate where the catalog has one (llama.cpp's cuBLAS path)."""
    found = rate(card, architecture, precision)
    c = ceilings(card, architecture, precision, accumulate16=accumulate16)
    # a precision the card does not run (fp8 before Ada) has no rate: unknown, not timed
    # at another precision's (a front-end that runs it otherwise asks for that precision)
    timed = time(card) if c is not None and found.tflops is not None else None
    if c is not None and timed is not None:
        peak = c.tensor_flops if c.tensor_flops is not None else c.cuda_core_flops
        basis = timed.profile.ceilings.basis if timed.profile is not None else c.basis
        basis += f"; {timed.basis}" if timed.basis else ""
        return Speed(
            unit,
            precision,
            dict(timed.phases),
            basis,
            found.basis,
            c.derived or found.derived,
            peak / 1e12,
            card.memory_bandwidth_gbs,
            timed.profile,
            timed.decode_compute_bound_batch,
        )
    floor: dict[Phase, float] = {}
    floor_basis = None
    if found.tflops is None and found.lower_bound_tflops is not None and found.figure:
        floored = card.model_copy(update={found.figure: found.lower_bound_tflops})
        at_floor = time(floored)
        if at_floor is not None:
            floor = {p: r.throughput for p, r in at_floor.phases.items()}
            floor_basis = found.lower_bound_basis or "a floor"
    return Speed(
        unit,
        precision,
        {},
        "",
        found.basis,
        False,
        found.tflops,
        card.memory_bandwidth_gbs,
        unknown_reason=unknown_reason(found, card),
        floor=floor,
        floor_basis=floor_basis if floor else None,
    )


def unknown_fields(s: Speed) -> dict[str, object]:
    """The JSON fields every kind's speed gives for this policy: why it is unknown (null
    where known), and each phase's throughput at the floor rate with what that rate is."""
    return {
        "unknown_reason": s.unknown_reason,
        "floor": dict(s.floor),
        "floor_basis": s.floor_basis,
    }
