"""A transformer's text: its estimate on each GPU (the breakdown, the largest batch and
longest sequence, the rough speed); its ranking is fit.report.ranking_text's, as every
kind's."""

from __future__ import annotations

from gputui.core.textsafe import visible
from gputui.fit.core.roofline import EFFICIENCY, LAUNCH_S
from gputui.fit.core.speed import Phase, Speed
from gputui.fit.transformer.estimate import Estimate, vllm_pool
from gputui.fit.transformer.model import TransformerModel
from gputui.fit.transformer.report import model_line, workload_line
from gputui.fit.transformer.workload import Workload
from gputui.fit.units import count, gib


def seq_word(wl: Workload) -> str:
    """What a workload's sequence is called: the prompt of a generation, else a sequence."""
    return "prompt" if wl.mode == "generate" else "sequence"


def render_estimate(e: Estimate) -> list[str]:
    wl = e.workload
    b = e.breakdown
    lines = [
        f"  peak {gib(b.total)} during {e.peak_phase}: {e.verdict} in {gib(e.limit_bytes)}",
        f"    weights {gib(b.weights)} | gradients {gib(b.gradients)} | optimizer state "
        f"{gib(b.optimizer_state)} | activations {gib(b.activations)} | KV cache {gib(b.kv_cache)} | "
        f"workspace {gib(b.workspace)} | CUDA context {gib(b.cuda_context)} | allocator {gib(b.allocator)}",
        f"  largest batch at {seq_word(wl)} {wl.seq_len:,}: {count(e.max_batch_size)}",
    ]
    if wl.mode == "generate" and wl.engine == "vllm":
        pool, _ = vllm_pool(e.model, wl, e.target, e.limit_bytes)
        lines.append(
            f"  vLLM keeps {gib(e.limit_bytes)} (gpu_memory_utilization 0.9); after the weights "
            f"and activations its KV pool of about {gib(pool)} holds {count(e.max_batch_size)} "
            f"sequence(s) of {wl.context:,} tokens"
        )
    if e.longest_seq:
        cap = " (the model's maximum)" if e.longest_capped else ""
        ctx = f" (context {e.longest_context:,})" if wl.mode == "generate" else ""
        least = "at least " if e.longest_at_search_limit else ""
        lines.append(
            f"  longest {seq_word(wl)} at batch {wl.batch_size}: {least}{e.longest_seq:,} "
            f"tokens{ctx}{cap}"
        )
    else:
        lines.append(f"  longest {seq_word(wl)} at batch {wl.batch_size}: none fits")
    if e.free_bytes is not None:
        lines.append(
            f"  now ({gib(e.free_bytes)} free): {e.verdict_free}, largest batch "
            f"{count(e.max_batch_size_free or 0)}, longest {seq_word(wl)} {e.longest_seq_free or 0:,}"
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
            f"decode ~{s.decode_tokens_per_s:,.0f} tokens/s ({s.bound('decode')}-bound at batch "
            f"{wl.batch_size}; {_turn(s)})"
        )
    if wl.mode != "train" and s.prefill_tokens_per_s:
        bits.append(f"prefill ~{s.prefill_tokens_per_s:,.0f} tokens/s ({s.bound('prefill')}-bound)")
    if wl.mode == "train" and s.train_tokens_per_s:
        bits.append(f"training ~{s.train_tokens_per_s:,.0f} tokens/s ({s.bound('train')}-bound)")
    if not bits:
        why = s.unknown_reason or "the catalog lacks a figure this card needs"
        phase: Phase = (
            "train" if wl.mode == "train" else "decode" if "decode" in s.floor else "prefill"
        )
        floor = s.floor.get(phase)
        at_least = f"; {phase} at least ~{floor:,.0f} tokens/s at {s.floor_basis}" if floor else ""
        return [f"  rough speed: unknown ({why}{at_least})"]
    # what the speed assumed of the framework (fit.core.software): the optimizer's kernels
    sw = f"; {wl.optimizer_impl} optimizer" if wl.mode == "train" else ""
    return [
        f"  rough speed: {', '.join(bits)}",
        f"    roofline in {s.precision}: {s.basis}; matmuls at "
        f"{EFFICIENCY['matmul']:.0%} of peak and bandwidth, {LAUNCH_S * 1e6:g} us per kernel{sw}",
    ]


def render(
    m: TransformerModel, wl: Workload, estimates: list[Estimate], target_lines: list[str]
) -> list[str]:
    lines = [model_line(m), workload_line(wl, m)]
    for line, e in zip(target_lines, estimates, strict=True):
        lines += ["", line, *render_estimate(e)]
    return [visible(line) for line in lines]


def workload_title(m: TransformerModel, wl: Workload, per_card: bool = False) -> list[str]:
    """The lines above a transformer's ranking (fit.report.ranking_text's table)."""
    return [model_line(m), workload_line(wl, m, per_card), ""]
