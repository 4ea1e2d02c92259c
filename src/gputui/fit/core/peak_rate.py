"""Which catalog figure a precision runs at on a card, and what to say when it is unknown.

The ranking answers "which GPU should I pick", so a missing figure must never pass for a
slow card, and a precision the hardware does not accelerate must never borrow another
precision's rate without saying so. Pure: catalog models in, a `Rate` out.
"""

from __future__ import annotations

from dataclasses import dataclass

from gputui.catalog.models import Architecture, Card
from gputui.fit.core.precision import cuda_core_fp16_fast, has_tensor, policy

# Card field holding each tensor key's dense throughput.
TENSOR_FIELDS = {
    "fp16": "fp16_tensor_tflops",
    "bf16": "bf16_tensor_tflops",
    "tf32": "tf32_tensor_tflops",
    "int8": "int8_tensor_tops",
    "fp8": "fp8_tensor_tflops",
}


@dataclass(frozen=True, slots=True)
class Rate:
    """The peak a precision runs at on a card, or why it is unknown."""

    tflops: float | None  # None: unknown
    basis: str  # what the figure is, e.g. "bf16 tensor", "fp32 (no tf32 tensor cores)"
    figure: str | None  # the Card field it came from
    derived: bool  # the figure is marked derived in the catalog (an architecture rule)
    unknown_reason: str | None = None  # set when tflops is None
    lower_bound_tflops: float | None = None  # a known rate the real one is at least (ranking)
    lower_bound_basis: str | None = None  # what that floor is


def _floor(card: Card, key: str) -> tuple[float | None, str | None]:
    """The highest rate the unknown one is sure to reach, and what it is.

    Tensor maths with FP32 accumulate (FP16, BF16) runs at least at half the FP16-accumulate
    rate: GeForce boards halve it, professional and data-centre boards do not (Turing, GA102
    and Ada whitepapers). Any tensor rate is at least the FP32 rate of the CUDA cores.
    """
    options: list[tuple[float, str]] = []
    if card.fp32_tflops is not None:
        options.append((card.fp32_tflops, "its fp32 rate"))
    acc16 = card.fp16_acc16_tensor_tflops
    if key in {"fp16", "bf16"} and acc16 is not None:
        options.append((acc16 / 2, "half its fp16-accumulate tensor rate"))
    if not options:
        return None, None
    return max(options)


def _from_field(card: Card, field: str, basis: str) -> Rate:
    value = getattr(card, field)
    return Rate(value, basis, field, card.is_derived(field))


def rate(card: Card, architecture: Architecture | None, precision: str) -> Rate:
    """The datasheet peak `precision` uses on `card` (matrix maths, dense)."""
    key = policy(precision).tensor_key
    if key is None:  # fp32 on the CUDA cores
        if card.fp32_tflops is None:
            return Rate(None, "fp32", "fp32_tflops", False, f"{card.name}: no FP32 figure")
        return _from_field(card, "fp32_tflops", "fp32")
    field = TENSOR_FIELDS[key]
    if has_tensor(architecture, key, card):
        value = getattr(card, field)
        if value is not None:
            return _from_field(card, field, f"{key} tensor")
        # The hardware runs it but no figure is known: say so, keep what is known.
        lower, basis = _floor(card, key)
        return Rate(
            None,
            f"{key} tensor",
            field,
            False,
            f"no published or derivable {key} tensor figure",
            lower_bound_tflops=lower,
            lower_bound_basis=basis,
        )
    # Not on tensor cores here: what the chip really runs it at.
    if key == "fp16" and cuda_core_fp16_fast(architecture, card):
        if card.fp16_tflops is not None:
            return _from_field(card, "fp16_tflops", "fp16 on CUDA cores (no tensor cores)")
        return Rate(
            None,
            "fp16 on CUDA cores",
            "fp16_tflops",
            False,
            "no FP16 (CUDA core) figure",
            lower_bound_tflops=card.fp32_tflops,
            lower_bound_basis="its fp32 rate",
        )
    if key in {"fp16", "bf16", "tf32"} and card.fp32_tflops is not None:
        # cuBLAS computes 16-bit/TF32 GEMMs in FP32 where the chip has no faster path.
        return Rate(
            card.fp32_tflops,
            f"fp32 rate (no {key} tensor cores or fast {key} on this chip)",
            "fp32_tflops",
            card.is_derived("fp32_tflops"),
        )
    return Rate(None, f"{key}", field, False, f"{card.name} does not accelerate {key}")
