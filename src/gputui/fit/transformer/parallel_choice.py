"""Which multi-GPU strategy a transformer job uses when `--parallel` is not given, and the
hints that say what the other strategies and card counts would give.

Every figure is the memory model's own (memory.stage_memory: what each GPU holds under
the strategy), never a factor. Strategies are tried cheapest first, cheapest meaning the
least communication and setup: DDP (a full replica), ZeRO-2 (optimizer state and
gradients sharded), ZeRO-3 / FSDP (the weights sharded too; the lower peak of the two),
then tensor or pipeline parallel (the lower peak of the two). Inference and generation
have only tensor and pipeline parallel, in that order.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from gputui.fit.core.target import Target
from gputui.fit.core.verdict import verdict
from gputui.fit.transformer.estimate import CARD_COUNTS, estimate, memory, stage_memories
from gputui.fit.transformer.memory import StageMemory
from gputui.fit.transformer.model import TransformerModel
from gputui.fit.transformer.savers import all_savers
from gputui.fit.transformer.workload import Parallel, Workload
from gputui.fit.units import gib

TRAIN_TIERS: tuple[tuple[Parallel, ...], ...] = (
    ("ddp",),
    ("zero2",),
    ("zero3", "fsdp"),
    ("tp", "pp"),
)
SERVE_TIERS: tuple[tuple[Parallel, ...], ...] = (("tp",), ("pp",))
MAX_TP = 8  # tensor parallel stays within one node's NVLink domain


def tiers(wl: Workload) -> tuple[tuple[Parallel, ...], ...]:
    return TRAIN_TIERS if wl.training else SERVE_TIERS


def split(model: TransformerModel, wl: Workload, parallel: Parallel, n: int) -> Workload | None:
    """`wl` over n GPUs with `parallel` (tp or pp over all n); None where the model cannot
    split that way (tp must divide the heads and stay within MAX_TP; pp needs a layer a stage)."""
    cfg = model.config
    if parallel == "tp" and (n > MAX_TP or cfg.num_heads % n):
        return None
    if parallel == "pp" and n > cfg.num_layers:
        return None
    return replace(
        wl,
        gpus=n,
        parallel=parallel,
        tp=n if parallel == "tp" else 1,
        pp=n if parallel == "pp" else 1,
    )


def _limit(target: Target) -> int:
    """The memory the verdict that decides the exit code is taken against."""
    return target.memory_free if target.memory_free is not None else target.memory_total


def _cc(target: Target) -> str | None:
    return target.compute_capability or (target.card.compute_capability if target.card else None)


Built = dict[tuple[str, int], tuple[StageMemory, ...]]


def peak(model: TransformerModel, wl: Workload, target: Target, built: Built | None = None) -> int:
    """The per-GPU peak; `built` keeps each (strategy, GPUs)'s phases across targets."""
    sms = None
    if built is not None:
        key = (wl.parallel, wl.gpus)
        sms = built.get(key)
        if sms is None:
            sms = built[key] = stage_memories(model, wl)
    return memory(model, wl, _cc(target), sms).peak(wl.batch_size, wl.seq_len)


def _fits(
    model: TransformerModel, wl: Workload, targets: list[Target], built: Built | None
) -> bool:
    return all(verdict(peak(model, wl, t, built), _limit(t)) != "does not fit" for t in targets)


@dataclass(frozen=True, slots=True)
class Choice:
    """The strategy used, how it was decided and the per-GPU peaks tried on the first GPU."""

    parallel: str
    chosen_by: str  # "default" (no --parallel, tp or pp given), "asked" or "one GPU"
    fits: bool
    reason: str
    tried: tuple[tuple[str, int], ...] = ()
    changed: bool = False  # the choice differs from the fixed default (ddp / tp) of before

    def as_dict(self) -> dict[str, Any]:
        return {
            "parallel": self.parallel,
            "chosen_by": self.chosen_by,
            "fits": self.fits,
            "reason": self.reason,
            "tried": [{"parallel": p, "peak_bytes": b} for p, b in self.tried],
        }

    def line(self) -> str | None:
        """The text line; None where the fixed default stands (its output is unchanged)."""
        return f"parallel: {self.reason}" if self.changed else None


def asked(wl: Workload) -> Choice:
    if wl.gpus == 1:
        return Choice("none", "one GPU", True, "one GPU: nothing to split")
    return Choice(wl.parallel, "asked", True, f"{wl.parallel} as asked (--parallel, --tp or --pp)")


def choose(
    model: TransformerModel, wl: Workload, targets: list[Target], built: Built | None = None
) -> tuple[Workload, Choice]:
    """The cheapest strategy whose peak fits every target (in the memory free now where it
    is known); where none fits, the one with the lowest peak, and the choice says so.
    `built`: phases kept across calls (--all-cards chooses once per card)."""
    n = wl.gpus
    first = targets[0]
    tried: list[tuple[str, int]] = []
    options: list[tuple[Workload, int]] = []
    for depth, tier in enumerate(tiers(wl)):
        earlier = len(tried)
        fitting: list[tuple[Workload, int]] = []
        for par in tier:
            swl = split(model, wl, par, n)
            if swl is None:
                continue
            p = peak(model, swl, first, built)
            tried.append((par, p))
            options.append((swl, p))
            if _fits(model, swl, targets, built):
                fitting.append((swl, p))
        if fitting:
            best, p = min(fitting, key=lambda x: x[1])
            default = tiers(wl)[0][0]
            before = ", ".join(f"{name} {gib(b)}" for name, b in tried[:earlier])
            why = (
                f"{best.parallel} chosen (no --parallel given): the cheapest strategy that fits "
                f"{n} GPUs of {gib(_limit(first))}, at {gib(p)} per GPU"
                + (f" (over it: {before})" if before else "")
            )
            if best.parallel == default and depth == 0:
                why = f"{default} (the default, no --parallel given): fits at {gib(p)} per GPU"
            return best, Choice(
                best.parallel, "default", True, why, tuple(tried), best.parallel != default
            )
    if not options:  # nothing splits n ways: keep the workload as the CLI built it
        return wl, Choice(
            wl.parallel, "default", False, f"{wl.parallel}: no strategy splits {n} ways"
        )
    best, p = min(options, key=lambda x: x[1])
    listed = ", ".join(f"{name} {gib(b)}" for name, b in tried)
    why = (
        f"none fits {n} GPUs of {gib(_limit(first))} (per GPU: {listed}); showing "
        f"{best.parallel}, the lowest peak; the hints list the card counts that fit"
    )
    return best, Choice(best.parallel, "default", False, why, tuple(tried), True)


def _flags(wl: Workload, base: Workload) -> str:
    bits = []
    if wl.gpus != base.gpus:
        bits.append(f"--gpus {wl.gpus}")
    if wl.parallel != base.parallel or wl.gpus != base.gpus:
        bits.append(f"--parallel {wl.parallel}")
    return " ".join(bits)


def _line(
    flag: str,
    model: TransformerModel,
    wl: Workload,
    target: Target,
    tail: str = "",
    known: Any = None,
) -> str:
    a = known if known is not None else estimate(model, wl, target)
    per = " per GPU" if wl.gpus > 1 else ""
    return (
        f"  with {flag}: peak {gib(a.peak_bytes)}{per}, {a.verdict_free or a.verdict}, longest "
        f"sequence {a.longest_seq:,}{' (the model maximum)' if a.longest_capped else ''}{tail}"
    )


def saver_tries(wl: Workload, e: Any) -> list[tuple[str, Workload, str]]:
    """(flags, workload, cost) of the single-GPU savers (fit.transformer.savers, cheapest
    first), then a smaller batch and fewer tokens."""
    tries = [(s.flags, s.workload, s.cost) for s in all_savers(wl, _cc(e.target))]
    batch = e.max_batch_size_free if e.max_batch_size_free is not None else e.max_batch_size
    if 0 < batch < wl.batch_size:
        tries.append((f"--batch-size {batch}", replace(wl, batch_size=batch), "fewer samples a step"))
    seq = e.longest_seq_free if e.longest_seq_free is not None else e.longest_seq
    if 0 < seq < wl.seq_len:
        tries.append((f"--seq-len {seq}", replace(wl, seq_len=seq), "shorter sequences"))
    return tries


def parallel_lines(model: TransformerModel, wl: Workload, target: Target) -> list[str]:
    """The other strategies on the GPUs given, then for each strategy the fewest cards
    (of CARD_COUNTS) that make the job fit, each with the peak per GPU it gives."""
    lines: list[str] = []
    strategies = [p for tier in tiers(wl) for p in tier]
    if wl.gpus > 1:
        for par in strategies:
            swl = split(model, wl, par, wl.gpus)
            if swl is not None and par != wl.parallel:
                lines.append(_line(f"--parallel {par}", model, swl, target))
    none_fit = []
    for par in strategies:
        for n in CARD_COUNTS:
            if n < 2 or n == wl.gpus:
                continue
            swl = split(model, wl, par, n)
            if swl is None:
                continue
            if verdict(peak(model, swl, target), _limit(target)) != "does not fit":
                tail = f" (the fewest of this GPU that fit with {par})"
                lines.append(_line(_flags(swl, wl), model, swl, target, tail))
                break
        else:
            none_fit.append(par)
    wide = _tp_beyond_a_node(model, wl, target) if "tp" in none_fit else None
    if wide is not None:
        none_fit.remove("tp")
        lines.append(
            _line(_flags(wide, wl), model, wide, target, " (tensor parallel beyond one "
                  f"node of {MAX_TP}: its all-reduces cross the network, slow)")
        )  # fmt: skip
    wide_ones = [p for p in none_fit if p != "tp"]
    if wide_ones:
        lines.append(
            f"  with {', '.join(wide_ones)}: no count of up to {CARD_COUNTS[-1]} of this GPU fits"
        )
    if "tp" in none_fit:
        lines.append(
            f"  with tp: no count of up to {MAX_TP} (one node) of this GPU fits, nor more"
        )
    return lines


def _tp_beyond_a_node(model: TransformerModel, wl: Workload, target: Target) -> Workload | None:
    """The fewest GPUs beyond MAX_TP whose tensor parallel fits (the heads must divide)."""
    for n in CARD_COUNTS:
        if n <= MAX_TP or n == wl.gpus or model.config.num_heads % n:
            continue
        swl = replace(wl, gpus=n, parallel="tp", tp=n, pp=1)
        if verdict(peak(model, swl, target), _limit(target)) != "does not fit":
            return swl
    return None


def hint_lines(model: TransformerModel, wl: Workload, e: Any) -> list[str]:
    """When the job does not fit the first GPU: what each saver, each other strategy and
    each card count would give there."""
    if e.fits_now:
        return []
    target = e.target
    lines, cheapest = [], None
    for flag, alt, cost in saver_tries(wl, e):
        a = estimate(model, alt, target)
        if a.peak_bytes > 0.99 * e.peak_bytes and alt.batch_size == wl.batch_size:
            continue  # saves nothing here (LoRA's tiny optimizer, a peak elsewhere)
        lines.append(_line(flag, model, alt, target, f"; cost: {cost}", a))
        if cheapest is None and a.verdict != "does not fit" and a.longest_seq:
            cheapest = flag
    if cheapest is not None:
        lines.insert(0, f"  on this one GPU, the cheapest change that fits: {cheapest} (the changes below go cheapest first)")
    lines += parallel_lines(model, wl, target)
    return ["", "hints:", *lines] if lines else []
