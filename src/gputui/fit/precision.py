"""Numeric precisions: what each costs in bytes and which a card's architecture offers.

Bytes follow what PyTorch keeps: automatic mixed precision (amp_*) leaves the
parameters, their gradients and the optimizer state in fp32 and adds 16-bit
copies of the conv/dense/recurrent weights that autocast makes for the forward
pass; pure bf16/fp16 keep everything in 16 bits; int8/fp8 are inference only
(weights and activations quantized, as TensorRT runs them).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from gputui.catalog.models import Architecture

PrecisionName = Literal["fp32", "tf32", "amp_fp16", "amp_bf16", "bf16", "fp16", "int8", "fp8"]
PRECISIONS: tuple[PrecisionName, ...] = (
    "fp32",
    "tf32",
    "amp_fp16",
    "amp_bf16",
    "bf16",
    "fp16",
    "int8",
    "fp8",
)


@dataclass(frozen=True, slots=True)
class Precision:
    name: PrecisionName
    weight_bytes: int  # parameters as stored (master weights under AMP)
    grad_bytes: int
    state_bytes: int  # per optimizer state element
    low_copy_bytes: int  # autocast's 16-bit weight copies (AMP only)
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
    "bf16": Precision("bf16", 2, 2, 2, 0, 2, True, "bf16"),
    "fp16": Precision("fp16", 2, 2, 2, 0, 2, True, "fp16"),
    "int8": Precision("int8", 1, 0, 0, 0, 1, False, "int8"),
    "fp8": Precision("fp8", 1, 0, 0, 0, 1, False, "fp8"),
}


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


def _tensor(arch: Architecture | None, key: str) -> bool:
    return arch is not None and key in arch.tensor_precisions


def precision_options(arch: Architecture | None, mode: str) -> tuple[PrecisionOption, ...]:
    """Every precision with whether this architecture and mode make sense for it."""
    training = mode == "train"
    label = arch.name if arch is not None else "an unknown architecture"
    out = []
    for name in PRECISIONS:
        p = POLICIES[name]
        if training and not p.training:
            out.append(PrecisionOption(name, False, f"{name} is for inference only"))
            continue
        if name == "fp32":
            out.append(PrecisionOption(name, True, "runs everywhere on the CUDA cores"))
            continue
        key = p.tensor_key or ""
        if _tensor(arch, key):
            why = f"{label} tensor cores run {key}"
            if name == "fp16" and training:
                why += " (pure fp16 training needs loss scaling and care; prefer AMP)"
            out.append(PrecisionOption(name, True, why))
        else:
            out.append(PrecisionOption(name, False, f"{label} has no {key} tensor cores"))
    return tuple(out)


def offered(arch: Architecture | None, mode: str) -> tuple[PrecisionName, ...]:
    return tuple(o.name for o in precision_options(arch, mode) if o.offered)


def recommend(arch: Architecture | None, mode: str) -> tuple[PrecisionName, str]:
    """The precision to use on this architecture, with a one-line reason."""
    label = arch.name if arch is not None else "this GPU"
    if mode == "train":
        if _tensor(arch, "bf16"):
            return (
                "amp_bf16",
                f"{label} has bf16 tensor cores: fp16 speed, fp32 range, no loss scaling",
            )
        if _tensor(arch, "fp16"):
            return (
                "amp_fp16",
                f"{label} has fp16 but no bf16 tensor cores: mixed precision with loss scaling",
            )
        return "fp32", f"{label} has no tensor cores: 16-bit would save memory but not time"
    extra = []
    if _tensor(arch, "fp8"):
        extra.append("fp8")
    if _tensor(arch, "int8"):
        extra.append("int8")
    tail = f"; {' and '.join(extra)} also offered after calibration" if extra else ""
    if _tensor(arch, "bf16"):
        return "bf16", f"{label} has bf16 tensor cores: half the memory of fp32, same range{tail}"
    if _tensor(arch, "fp16"):
        return "fp16", f"{label} has fp16 tensor cores: half the memory of fp32{tail}"
    return "fp32", f"{label} has no tensor cores{tail}"
