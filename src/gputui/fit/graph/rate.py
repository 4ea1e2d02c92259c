"""A layer model's rough speed on a card: the roofline's step time, or FLOPs alone.

The peak is the figure the precision really runs at on the card
(fit/core/throughput.py); without a bandwidth figure the step time falls back to
FLOPs / (peak x EFFICIENCY) plus a launch overhead per layer.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gputui.catalog.models import Architecture, Card
from gputui.fit.core.phased import PhasedModel
from gputui.fit.core.roofline import Profile, best_profile
from gputui.fit.graph.spec import ModelSpec
from gputui.fit.graph.speed import profile as roofline_profile

# Fraction of the datasheet peak a training/inference step reaches. Dense and conv
# layers in frameworks typically reach 30-60 %; recurrent and small layers less.
EFFICIENCY = 0.4
# Each layer costs at least a few kernel launches per pass whatever its size:
# this keeps tiny models from being credited millions of samples per second.
LAUNCH_OVERHEAD_S = 10e-6  # per layer per pass (forward; training counts 3 passes)


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
    # the roofline behind the figure (fit.core.roofline): per-op bounds, shares, per-layer
    # bounds; None when the card lacks a bandwidth figure and FLOPs alone were used
    profile: Profile | None = None


def speed(
    model: ModelSpec | PhasedModel,
    card: Card,
    precision: str,
    batch: int,
    mode: str,
    architecture: Architecture | None = None,
) -> Speed | None:
    """Rough: the roofline step time (fit.core.roofline). None without a figure.

    The peak is the figure the precision really runs at on this card (see
    fit.core.throughput.rate): an unknown tensor figure gives None, never a slower
    precision's rate passed off as this one's. A card without a bandwidth figure
    falls back to FLOPs / (peak x EFFICIENCY) + launch overhead.
    """
    from gputui.fit.core.throughput import rate

    found = rate(card, architecture, precision)
    if found.tflops is None:
        return None
    if isinstance(model, ModelSpec):
        # how the framework runs it (layout, optimizer kernels): the models file's or the CLI's
        prof = roofline_profile(model, card, architecture, precision, batch, mode, model.software)
    else:  # a phased front-end times its own op list
        prof = best_profile(
            card, architecture, precision, batch, lambda p: model.step_ops(p, batch)
        )
    if prof is None:
        return _speed_at(model, found.tflops, batch, mode, found.basis, found.derived, precision)
    derived = found.derived or prof.ceilings.derived
    return Speed(found.tflops, prof.step_time_s, prof.samples_per_s, found.basis, derived, prof)


def _speed_at(
    model: ModelSpec | PhasedModel,
    tflops: float,
    batch: int,
    mode: str,
    basis: str,
    derived: bool,
    precision: str,
) -> Speed:
    if isinstance(model, ModelSpec):
        flops = step_flops(model, mode) * batch
        layers = sum(len(n.layers) for n in model.networks)
    else:
        ops = model.step_ops(precision, batch)[0]
        flops, layers = int(sum(op.flops for op in ops)), len({op.label for op in ops})
    passes = 3 if mode == "train" else 1
    seconds = flops / (tflops * 1e12 * EFFICIENCY) + layers * passes * LAUNCH_OVERHEAD_S
    return Speed(tflops, seconds, batch / seconds if seconds > 0 else math.inf, basis, derived)
