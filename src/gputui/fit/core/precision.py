"""Numeric precisions: what each costs in bytes and which a card offers.

Bytes follow what PyTorch keeps: automatic mixed precision (amp_*) leaves the
parameters, their gradients and the optimizer state in fp32 and adds 16-bit
copies of the conv/dense/recurrent weights that autocast makes for the forward
pass; pure bf16/fp16 keep everything in 16 bits; int8/fp8 are inference only
(weights and activations quantized, as TensorRT runs them). amp_fp8 is training
with NVIDIA Transformer Engine: fp32 master weights, gradients and state, 8-bit
weight copies for the GEMMs and 16-bit activations elsewhere (a conservative count,
TE also keeps some GEMM inputs in fp8).

What is offered is decided per chip where the architecture is not enough: GP100
(P100) runs FP16 at twice its FP32 rate while GP102/GP104 run it at 1/64, and the
TU116/TU117 chips of the GTX 16 series have no tensor cores but a double-rate FP16
path. The card's `chip` field (or its compute capability for GP100) says which.
"""

from __future__ import annotations

from dataclasses import dataclass

from gputui.catalog.models import Architecture, Card
from gputui.fit.core.precision_names import PRECISIONS, PrecisionName


@dataclass(frozen=True, slots=True)
class Precision:
    name: PrecisionName
    weight_bytes: int  # parameters as stored (master weights under AMP)
    grad_bytes: int
    state_bytes: int  # per optimizer state element
    low_copy_bytes: int  # autocast's low-precision weight copies (AMP only)
    act_bytes: int  # activations and their gradients
    training: bool  # usable for training
    tensor_key: str | None  # the catalog's tensor-throughput key; None: CUDA cores (fp32)

    @property
    def amp(self) -> bool:
        return self.low_copy_bytes > 0


POLICIES: dict[str, Precision] = {
    "fp32": Precision("fp32", 4, 4, 4, 0, 4, True, None),
    "tf32": Precision("tf32", 4, 4, 4, 0, 4, True, "tf32"),
    "amp_fp16": Precision("amp_fp16", 4, 4, 4, 2, 2, True, "fp16"),
    "amp_bf16": Precision("amp_bf16", 4, 4, 4, 2, 2, True, "bf16"),
    "amp_fp8": Precision("amp_fp8", 4, 4, 4, 1, 2, True, "fp8"),
    "bf16": Precision("bf16", 2, 2, 2, 0, 2, True, "bf16"),
    "fp16": Precision("fp16", 2, 2, 2, 0, 2, True, "fp16"),
    "int8": Precision("int8", 1, 0, 0, 0, 1, False, "int8"),
    "fp8": Precision("fp8", 1, 0, 0, 0, 1, False, "fp8"),
}

# Chips without tensor cores although their architecture has them (GTX 16 series).
NO_TENSOR_CHIPS = frozenset({"TU116", "TU117"})
# Chips without tensor cores whose CUDA cores run FP16 at twice the FP32 rate
# (CUDA C++ Programming Guide, arithmetic instruction throughput: 128 FP16 vs 64 FP32
# results per clock per SM on cc 6.0 and 7.5; 2 per clock on cc 6.1).
FAST_FP16_CHIPS = frozenset({"GP100", "TU116", "TU117"})


def policy(name: str) -> Precision:
    try:
        return POLICIES[name]
    except KeyError:
        raise ValueError(f"unknown precision {name!r} (known: {', '.join(PRECISIONS)})") from None


@dataclass(frozen=True, slots=True)
class PrecisionOption:
    name: PrecisionName
    offered: bool
    reason: str  # one line: why (not) offered


def chip_of(card: Card | None) -> str | None:
    """The card's chip; GP100 is also known by its compute capability (6.0)."""
    if card is None:
        return None
    if card.chip:
        return card.chip.upper()
    return "GP100" if card.compute_capability == "6.0" else None


def has_tensor(arch: Architecture | None, key: str, card: Card | None = None) -> bool:
    """Whether this card's tensor cores run `key` (the architecture's list, less chip gaps)."""
    if chip_of(card) in NO_TENSOR_CHIPS:
        return False
    return arch is not None and key in arch.tensor_precisions


def cuda_core_fp16_fast(arch: Architecture | None, card: Card | None) -> bool:
    """FP16 at twice FP32 on the CUDA cores, on a chip with no FP16 tensor cores."""
    return chip_of(card) in FAST_FP16_CHIPS and not has_tensor(arch, "fp16", card)


def _label(arch: Architecture | None, card: Card | None) -> str:
    chip = chip_of(card)
    if arch is None:
        return chip or "an unknown architecture"
    return f"{arch.name} {chip}" if chip else arch.name


def _fp8_training_reason(label: str) -> str:
    return (
        f"{label} tensor cores run fp8: Transformer Engine training at up to 2x the bf16 "
        "rate, an option rather than the default (needs TE layers, per-tensor scaling, "
        "and a check that the loss matches bf16)"
    )


def precision_options(
    arch: Architecture | None, mode: str, card: Card | None = None
) -> tuple[PrecisionOption, ...]:
    """Every precision with whether this card (or architecture) and mode make sense for it."""
    training = mode == "train"
    label = _label(arch, card)
    out = []
    for name in PRECISIONS:
        p = POLICIES[name]
        if training and not p.training:
            out.append(PrecisionOption(name, False, f"{name} is for inference only"))
            continue
        if name == "amp_fp8" and not training:
            out.append(PrecisionOption(name, False, "amp_fp8 is Transformer Engine training"))
            continue
        if name == "fp32":
            out.append(PrecisionOption(name, True, "runs everywhere on the CUDA cores"))
            continue
        key = p.tensor_key or ""
        if has_tensor(arch, key, card):
            if name == "amp_fp8":
                out.append(PrecisionOption(name, True, _fp8_training_reason(label)))
                continue
            why = f"{label} tensor cores run {key}"
            if name == "fp16" and training:
                why += " (pure fp16 training needs loss scaling and care; prefer AMP)"
            out.append(PrecisionOption(name, True, why))
        elif key == "fp16" and cuda_core_fp16_fast(arch, card):
            why = f"{label} has no tensor cores but runs fp16 at twice its fp32 rate"
            if training:
                why += " (loss scaling needed)"
            out.append(PrecisionOption(name, True, why))
        elif key == "fp16" and chip_of(card) in {"GP102", "GP104", "GP106", "GP107"}:
            out.append(
                PrecisionOption(
                    name, False, f"{label} runs fp16 at 1/64 of fp32: saves memory, not time"
                )
            )
        elif chip_of(card) in NO_TENSOR_CHIPS:
            out.append(PrecisionOption(name, False, f"{label} has no tensor cores"))
        else:
            out.append(PrecisionOption(name, False, f"{label} has no {key} tensor cores"))
    return tuple(out)


def offered(
    arch: Architecture | None, mode: str, card: Card | None = None
) -> tuple[PrecisionName, ...]:
    return tuple(o.name for o in precision_options(arch, mode, card) if o.offered)


def recommend(
    arch: Architecture | None, mode: str, card: Card | None = None
) -> tuple[PrecisionName, str]:
    """The precision to use on this card (or architecture), with a one-line reason."""
    label = _label(arch, card) if arch is not None or card is not None else "this GPU"
    if mode == "train":
        if has_tensor(arch, "bf16", card):
            why = f"{label} has bf16 tensor cores: fp16 speed, fp32 range, no loss scaling"
            if has_tensor(arch, "fp8", card):
                why += "; amp_fp8 (Transformer Engine) is an option for more speed"
            return "amp_bf16", why
        if has_tensor(arch, "fp16", card):
            return (
                "amp_fp16",
                f"{label} has fp16 but no bf16 tensor cores: mixed precision with loss scaling",
            )
        if cuda_core_fp16_fast(arch, card):
            return (
                "amp_fp16",
                f"{label} has no tensor cores but runs fp16 at twice its fp32 rate: "
                "mixed precision with loss scaling",
            )
        return "fp32", f"{label} has no tensor cores: 16-bit would save memory but not time"
    extra = []
    if has_tensor(arch, "fp8", card):
        extra.append("fp8")
    if has_tensor(arch, "int8", card):
        extra.append("int8")
    tail = f"; {' and '.join(extra)} also offered after calibration" if extra else ""
    if has_tensor(arch, "bf16", card):
        return "bf16", f"{label} has bf16 tensor cores: half the memory of fp32, same range{tail}"
    if has_tensor(arch, "fp16", card):
        return "fp16", f"{label} has fp16 tensor cores: half the memory of fp32{tail}"
    if cuda_core_fp16_fast(arch, card):
        return "fp16", f"{label} runs fp16 at twice its fp32 rate: half the memory of fp32{tail}"
    return "fp32", f"{label} has no tensor cores{tail}"


# The precisions a speed comparison may recommend over recommend()'s: those that keep the
# model's numerics as its user wrote them (no loss of range to pure 16-bit training, no
# Transformer Engine layers or int8/fp8 calibration). tf32 is PyTorch's default for cuDNN
# convolutions already.
SPEED_CHOICES: dict[bool, tuple[PrecisionName, ...]] = {
    True: ("fp32", "tf32", "amp_bf16", "amp_fp16"),
    False: ("fp32", "tf32", "bf16", "fp16"),
}


@dataclass(frozen=True, slots=True)
class Computed:
    """One precision's answer on a card, as the speed comparison needs it."""

    name: str
    offered: bool
    fits: bool
    rate: float | None  # the roofline's samples/s (None: not computed)


def fastest_that_fits(
    table_choice: str, mode: str, computed: list[Computed]
) -> tuple[Computed, Computed | None] | None:
    """(the faster precision, the table choice's row) where the speed computed on this card
    contradicts recommend(): another of SPEED_CHOICES that is offered and fits runs faster,
    or the table's choice does not fit where one of them does. None: keep the table's."""
    allowed = SPEED_CHOICES[mode == "train"]
    usable = [c for c in computed if c.name in allowed and c.offered and c.fits and c.rate]
    if not usable:
        return None
    best = max(usable, key=lambda c: c.rate or 0.0)  # the first of equals: the narrower change
    mine = next((c for c in computed if c.name == table_choice), None)
    if mine is not None and mine in usable and (mine.rate or 0.0) >= (best.rate or 0.0):
        return None
    if mine is not None and mine.fits and mine.rate is None:
        return None  # the table's choice has no speed to compare: keep it
    return best, mine
