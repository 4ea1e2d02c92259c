"""A transformer's text: its estimate on each GPU (the breakdown, the largest batch and
longest sequence, the rough speed) and its ranking over the catalog."""

from __future__ import annotations

from gputui.core.textsafe import visible
from gputui.fit.core import power, third_party
from gputui.fit.core.roofline import EFFICIENCY, LAUNCH_S
from gputui.fit.transformer.estimate import Estimate
from gputui.fit.transformer.model import TransformerModel
from gputui.fit.transformer.ranking import Ranked
from gputui.fit.transformer.rate import Speed
from gputui.fit.transformer.report import model_line, workload_line
from gputui.fit.transformer.workload import Workload
from gputui.fit.units import count, gib


def _seq_word(wl: Workload) -> str:
    return "prompt" if wl.mode == "generate" else "sequence"


def render_estimate(e: Estimate) -> list[str]:
    wl = e.workload
    b = e.breakdown
    lines = [
        f"  peak {gib(b.total)} during {e.peak_phase}: {e.verdict} in {gib(e.limit_bytes)}",
        f"    weights {gib(b.weights)} | gradients {gib(b.gradients)} | optimizer state "
        f"{gib(b.optimizer_state)} | activations {gib(b.activations)} | KV cache {gib(b.kv_cache)} | "
        f"workspace {gib(b.workspace)} | CUDA context {gib(b.cuda_context)} | allocator {gib(b.allocator)}",
        f"  largest batch at {_seq_word(wl)} {wl.seq_len:,}: {count(e.max_batch_size)}",
    ]
    if e.longest_seq:
        cap = " (the model's maximum)" if e.longest_capped else ""
        ctx = f" (context {e.longest_context:,})" if wl.mode == "generate" else ""
        least = "at least " if e.longest_at_search_limit else ""
        lines.append(
            f"  longest {_seq_word(wl)} at batch {wl.batch_size}: {least}{e.longest_seq:,} "
            f"tokens{ctx}{cap}"
        )
    else:
        lines.append(f"  longest {_seq_word(wl)} at batch {wl.batch_size}: none fits")
    if e.free_bytes is not None:
        lines.append(
            f"  now ({gib(e.free_bytes)} free): {e.verdict_free}, largest batch "
            f"{count(e.max_batch_size_free or 0)}, longest {_seq_word(wl)} {e.longest_seq_free or 0:,}"
        )
    lines += speed_lines(e)
    lines += [f"  note: {visible(w)}" for w in e.warnings]
    return lines


def _turn(s: Speed) -> str:
    n = s.decode_compute_bound_batch
    return f"compute-bound from batch {n:,}" if n is not None else "no batch makes it compute-bound"


def speed_lines(e: Estimate) -> list[str]:
    """The rough tokens/s with the bound of each phase and the figures behind them."""
    wl, s = e.workload, e.speed
    if s is None:
        return []
    bits = []
    if wl.mode == "generate" and s.decode_tokens_per_s:
        bits.append(
            f"decode ~{s.decode_tokens_per_s:,.0f} tokens/s ({s.decode_bound}-bound at batch "
            f"{wl.batch_size}; {_turn(s)})"
        )
    if wl.mode != "train" and s.prefill_tokens_per_s:
        bits.append(f"prefill ~{s.prefill_tokens_per_s:,.0f} tokens/s ({s.prefill_bound}-bound)")
    if wl.mode == "train" and s.train_tokens_per_s:
        bits.append(f"training ~{s.train_tokens_per_s:,.0f} tokens/s ({s.train_bound}-bound)")
    if not bits:
        return ["  rough speed: unknown (the catalog lacks a figure this card needs)"]
    # what the speed assumed of the framework (fit.core.software): the optimizer's kernels
    sw = f"; {wl.optimizer_impl} optimizer" if wl.mode == "train" else ""
    return [
        f"  rough speed: {', '.join(bits)}",
        f"    roofline in {s.compute_precision}: {s.basis}; matmuls at "
        f"{EFFICIENCY['matmul']:.0%} of peak and bandwidth, {LAUNCH_S * 1e6:g} us per kernel{sw}",
    ]


def render(
    m: TransformerModel, wl: Workload, estimates: list[Estimate], target_lines: list[str]
) -> list[str]:
    lines = [model_line(m), workload_line(wl, m)]
    for line, e in zip(target_lines, estimates, strict=True):
        lines += ["", line, *render_estimate(e)]
    return [visible(line) for line in lines]


def render_ranking(
    m: TransformerModel, wl: Workload, ranked: list[Ranked], per_card: bool = False
) -> list[str]:
    word = {"train": "train tok/s", "generate": "decode tok/s"}.get(wl.mode, "prefill tok/s")
    lines = [
        model_line(m),
        workload_line(wl, m, per_card),
        "",
        f"  {'#':>2} {'card':<30} {'memory':>10} {'peak':>10} {'verdict':<12} {'max batch':>9} "
        f"{'longest ' + _seq_word(wl):>16} {word:>13} {'bound':<7} {'cards needed':>16}",
    ]
    for i, r in enumerate(ranked):
        e = r.estimate
        tps = f"{r.tokens_per_s:,.0f}" if r.tokens_per_s else "-"
        if r.tokens_per_s and third_party.speed_figures(r.card):
            tps += third_party.MARK
        need = f"{r.min_cards[0]} ({r.min_cards[1]})" if r.min_cards else "> 64"
        lines.append(
            f"  {i + 1:>2} {r.card.name[:30]:<30} {gib(r.card.memory_bytes):>10} {gib(e.peak_bytes):>10} "
            f"{e.verdict:<12} {count(e.max_batch_size):>9} "
            f"{f'{e.longest_seq:,}' + ('*' if e.longest_capped else ' '):>16} {tps:>13} "
            f"{r.bound or '-':<7} {need:>16}"
        )
    lines.append(
        "  (speed is rough: a roofline per phase, the weights and KV cache against the "
        f"bandwidth and the matmuls against the tensor peak, both at {EFFICIENCY['matmul']:.0%}; "
        "bound: what limits the phase ranked; cards needed: tensor parallel up to 8, then pipeline; "
        "training shards with ZeRO-3; * the model's maximum context, not memory)"
    )
    lines += third_party.note_lines(r.card for r in ranked)
    scored = [(r.card, r.tokens_per_s, r.estimate.fits) for r in ranked]
    lines += power.ranking_lines(scored, power.TOKENS, 30, 10)
    return [visible(line) for line in lines]
