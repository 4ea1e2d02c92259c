"""What a practitioner tries before buying more cards: the single-GPU memory savers of a
workload, ranked by what they cost in speed or quality, cheapest first.

Training: fused AdamW kernels (no cost: faster, and no parameter-sized temporary), an
8-bit optimizer (bitsandbytes; quality usually matches AdamW), gradient checkpointing
(exact, the forward runs again in the backward), pure bf16 (no fp32 master weights:
small updates round away), LoRA (adapters only) and QLoRA (a 4-bit base: slower and a
little quality lost). Every job: a smaller batch, then a shorter sequence. Each saver is
a Workload the memory model estimates like any other; nothing here is a factor.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from gputui.fit.transformer.workload import Workload


@dataclass(frozen=True, slots=True)
class Saver:
    """One change to the workload, the flags that ask for it and what it costs."""

    flags: str
    workload: Workload
    cost: str


def _bf16_capable(cc: str | None) -> bool:
    """bf16 tensor cores (Ampere, compute capability 8.0, and newer); unknown: offered."""
    if cc is None:
        return True
    try:
        return float(cc) >= 8.0
    except ValueError:
        return True


def cheap_savers(wl: Workload, cc: str | None = None) -> list[Saver]:
    """The savers that keep the method (a full fine-tune stays one), cheapest first, then
    all of them that apply together when there are two or more."""
    if not wl.training:
        return []
    out: list[Saver] = []
    if wl.optimizer == "adamw" and wl.optimizer_impl != "fused" and wl.backend == "cuda":
        out.append(
            Saver(
                "--optimizer-impl fused",
                replace(wl, optimizer_impl="fused"),
                "none (faster kernels, no parameter-sized temporary)",
            )
        )
    if wl.optimizer == "adamw":
        out.append(
            Saver(
                "--optimizer adamw_8bit",
                replace(wl, optimizer="adamw_8bit", optimizer_impl="foreach"),
                "8-bit state (bitsandbytes): quality usually matches AdamW",
            )
        )
    if not wl.grad_checkpointing:
        out.append(
            Saver(
                "--grad-checkpointing",
                replace(wl, grad_checkpointing=True),
                "exact, about a third slower: the forward runs again in the backward",
            )
        )
    if wl.method == "full" and wl.precision in ("amp_bf16", "fp32") and _bf16_capable(cc):
        out.append(
            Saver(
                "--precision bf16",
                replace(wl, precision="bf16"),
                "pure bf16: no fp32 master weights, small updates may round away",
            )
        )
    eight_bit = any(x.workload.optimizer == "adamw_8bit" for x in out)
    together, flags = wl, []
    for x in out:
        if x.workload.optimizer_impl == "fused" and eight_bit:
            continue  # bitsandbytes' own kernels replace torch's
        together = _merge(together, x.workload, wl)
        flags.append(x.flags)
    if len(flags) >= 2:
        out.append(Saver(" ".join(flags), together, "the costs of each, together"))
    return out


def _merge(acc: Workload, changed: Workload, base: Workload) -> Workload:
    """`acc` with the fields `changed` differs from `base` in."""
    names = ("optimizer", "optimizer_impl", "grad_checkpointing", "precision")
    diff = {f: getattr(changed, f) for f in names if getattr(changed, f) != getattr(base, f)}
    return replace(acc, **diff)


def method_savers(wl: Workload) -> list[Saver]:
    """The savers that change what is trained: LoRA, then QLoRA."""
    out: list[Saver] = []
    if wl.training and wl.method == "full":
        out.append(
            Saver(
                "--lora-rank 16",
                replace(wl, method="lora", weights="bf16"),
                "adapters only: less than a full fine-tune can learn",
            )
        )
    if wl.training and wl.method in ("full", "lora"):
        qlora = replace(
            wl, method="qlora", weights="nf4-dq", optimizer="adamw_8bit", grad_checkpointing=True
        )
        out.append(
            Saver(
                "--method qlora --grad-checkpointing",
                qlora,
                "a 4-bit base: slower, a little quality lost to quantization",
            )
        )
    return out


def all_savers(wl: Workload, cc: str | None = None) -> list[Saver]:
    """Every saver, ranked by cost: the cheap ones, then those that change the method."""
    return cheap_savers(wl, cc) + method_savers(wl)
