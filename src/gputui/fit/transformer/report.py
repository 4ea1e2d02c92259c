"""Text and JSON renderings of transformer estimates (field meanings in docs/fit.md, transformers part).

The text is made visible (textsafe) line by line where it is rendered: a config's
model_type, a path, a warning quoting a file are written by someone else. JSON
carries the strings as they are (json.dumps escapes every control character).
"""

from __future__ import annotations

from typing import Any

from gputui.core.textsafe import visible
from gputui.fit.core import power
from gputui.fit.core.roofline import EFFICIENCY, LAUNCH_S
from gputui.fit.report import gib, target_dict  # one byte format and GPU JSON for both
from gputui.fit.transformer.estimate import Estimate
from gputui.fit.transformer.model import TransformerModel
from gputui.fit.transformer.ranking import Ranked
from gputui.fit.transformer.rate import Speed
from gputui.fit.transformer.weights import lora_params
from gputui.fit.transformer.workload import Workload

SCHEMA_VERSION = 1


def count(n: int) -> str:
    if n >= 1 << 20 and n == 1 << 20:
        return "unbounded"
    return f"{n:,}"


def model_dict(m: TransformerModel) -> dict[str, Any]:
    c = m.config
    return {
        "name": m.name,
        "source": m.source,
        "input_kind": m.kind,
        "model_type": c.model_type,
        "params": m.params,
        "params_from": "checkpoint" if m.exact_params is not None else "config",
        "stored_bytes": m.stored_bytes,
        "stored_format": m.stored_format,
        "stored_dtypes": m.stored_dtypes or None,
        "hidden_size": c.hidden_size,
        "num_layers": c.num_layers,
        "num_heads": c.num_heads,
        "num_kv_heads": c.num_kv_heads,
        "head_dim": c.head_dim,
        "vocab_size": c.vocab_size,
        "max_position_embeddings": c.max_position_embeddings,
        "sliding_window": c.sliding_window,
        "sliding_layers": sum(c.is_sliding(i) for i in range(c.num_layers)),
        "experts": c.moe.num_experts if c.moe else None,
        "experts_per_token": c.moe.experts_per_token if c.moe else None,
        "mla_kv_lora_rank": c.mla.kv_lora_rank if c.mla else None,
        "encoder": c.encoder,
        "quantization": c.quantization.method if c.quantization else None,
    }


def workload_dict(wl: Workload, m: TransformerModel) -> dict[str, Any]:
    out: dict[str, Any] = {
        "mode": wl.mode,
        "batch_size": wl.batch_size,
        "seq_len": wl.seq_len,
        "weights": wl.weights,
        "attention": wl.attention,
        "backend": wl.backend,
        "gpus": wl.gpus,
        "parallel": wl.parallel,
        "tensor_parallel": wl.tp,
        "pipeline_parallel": wl.pp,
    }
    if wl.mode == "generate":
        out |= {
            "new_tokens": wl.new_tokens,
            "context": wl.context,
            "kv_dtype": wl.kv_dtype,
            "paged_block": wl.paged_block,
            "mla_cache": wl.mla_cache if m.config.mla else None,
            "prefill_chunk": wl.prefill_chunk,
        }
    if wl.mode == "train":
        out |= {
            "method": wl.method,
            "precision": wl.precision if wl.method == "full" else None,
            "optimizer": wl.optimizer,
            "optimizer_impl": wl.optimizer_impl,
            "grad_checkpointing": wl.grad_checkpointing,
            "grad_accum": wl.grad_accum,
        }
        if wl.method != "full":
            out |= {
                "lora_rank": wl.lora_rank,
                "lora_alpha": wl.lora_alpha,
                "lora_targets": list(wl.lora_targets),
                "trainable_params": lora_params(m.layout, wl.lora_targets, wl.lora_rank),
            }
    return out


def speed_dict(s: Speed | None) -> dict[str, Any] | None:
    if s is None:
        return None
    return {
        "rough": True,
        "model": "roofline",
        "decode_tokens_per_s": s.decode_tokens_per_s,
        "prefill_tokens_per_s": s.prefill_tokens_per_s,
        "train_tokens_per_s": s.train_tokens_per_s,
        "decode_bound": s.decode_bound,
        "prefill_bound": s.prefill_bound,
        "train_bound": s.train_bound,
        "decode_compute_bound_batch": s.decode_compute_bound_batch,
        "compute_precision": s.compute_precision,
        "basis": s.basis,
        "tflops_used": s.tflops_used,
        "bandwidth_gbs": s.bandwidth_gbs,
        "efficiency_assumed": dict(EFFICIENCY),
        "launch_overhead_s": LAUNCH_S,
    }


def estimate_dict(e: Estimate) -> dict[str, Any]:
    return {
        "gpu": target_dict(e.target),
        "peak_bytes": e.peak_bytes,
        "tensor_bytes": e.breakdown.tensor_bytes,
        "peak_phase": e.peak_phase,
        "limit_bytes": e.limit_bytes,
        "fits": e.fits,
        "verdict": e.verdict,
        "max_batch_size": e.max_batch_size,
        "longest_seq_len": e.longest_seq,
        "longest_context": e.longest_context,
        "longest_capped_by_model": e.longest_capped,
        "longest_at_search_limit": e.longest_at_search_limit,
        "free_bytes": e.free_bytes,
        "verdict_free": e.verdict_free,
        "max_batch_size_free": e.max_batch_size_free,
        "longest_seq_len_free": e.longest_seq_free,
        "breakdown": e.breakdown.as_dict(),
        "speed": speed_dict(e.speed),
        "warnings": list(e.warnings),
    }


def _workload_line(wl: Workload, m: TransformerModel, per_card: bool = False) -> str:
    if wl.mode == "train":
        if wl.method == "full":
            how = f"full fine-tune, {wl.precision}, {wl.optimizer}"
        else:
            n = lora_params(m.layout, wl.lora_targets, wl.lora_rank)
            how = (
                f"{'QLoRA' if wl.method == 'qlora' else 'LoRA'} r={wl.lora_rank} on "
                f"{','.join(wl.lora_targets)} ({n:,} trainable), {wl.weights} base, {wl.optimizer}"
            )
        extra = (", gradient checkpointing" if wl.grad_checkpointing else "") + (
            f", accumulate {wl.grad_accum}" if wl.grad_accum > 1 else ""
        )
        head = f"train: {how}{extra}, seq {wl.seq_len:,}, batch {wl.batch_size}"
    elif wl.mode in ("inference", "eval"):
        what = (
            "inference (one forward, no labels)"
            if wl.mode == "inference"
            else "eval (one forward with labels and loss)"
        )
        head = f"{what}: {wl.weights} weights, seq {wl.seq_len:,}, batch {wl.batch_size}"
    else:
        paged = f", paged blocks of {wl.paged_block}" if wl.paged_block else ""
        head = (
            f"generate: {wl.weights} weights, prompt {wl.seq_len:,} + {wl.new_tokens:,} new tokens, "
            f"{wl.batch_size} sequence(s), KV cache {wl.kv_dtype}{paged}"
        )
    head += f", {wl.attention} attention"
    if wl.gpus > 1 and per_card:  # --all-cards without --parallel: each card's own choice
        head += f"; {wl.gpus} GPUs (per card, the cheapest strategy that fits: cards needed)"
    elif wl.gpus > 1:
        head += f"; {wl.gpus} GPUs ({wl.parallel}, TP {wl.tp} x PP {wl.pp})"
    return head


def model_line(m: TransformerModel) -> str:
    c = m.config
    bits = [visible(c.model_type), f"{m.params:,} params"]
    if c.moe:
        bits.append(f"{c.moe.num_experts} experts, {c.moe.experts_per_token} per token")
    if c.mla:
        bits.append(f"MLA latent {c.mla.kv_lora_rank}")
    if c.num_kv_heads != c.num_heads and not c.mla:
        bits.append(f"GQA {c.num_heads}/{c.num_kv_heads} heads")
    if c.sliding_window:
        n = sum(c.is_sliding(i) for i in range(c.num_layers))
        bits.append(f"sliding window {c.sliding_window:,} on {n}/{c.num_layers} layers")
    return f"model: {visible(m.name)} ({', '.join(bits)}) from {visible(m.source)}"


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
    # what the speed assumed of the framework (fit.software): the optimizer's kernels
    sw = f"; {wl.optimizer_impl} optimizer" if wl.mode == "train" else ""
    return [
        f"  rough speed: {', '.join(bits)}",
        f"    roofline in {s.compute_precision}: {s.basis}; matmuls at "
        f"{EFFICIENCY['matmul']:.0%} of peak and bandwidth, {LAUNCH_S * 1e6:g} us per kernel{sw}",
    ]


def render(
    m: TransformerModel, wl: Workload, estimates: list[Estimate], target_lines: list[str]
) -> list[str]:
    lines = [model_line(m), _workload_line(wl, m)]
    for line, e in zip(target_lines, estimates, strict=True):
        lines += ["", line, *render_estimate(e)]
    return [visible(line) for line in lines]


def ranking_dict(ranked: list[Ranked]) -> list[dict[str, Any]]:
    return [
        {
            "rank": i + 1,
            "card": r.card.name,
            "memory_bytes": r.card.memory_bytes,
            "peak_bytes": r.estimate.peak_bytes,
            "verdict": r.estimate.verdict,
            "fits": r.estimate.fits,
            "max_batch_size": r.estimate.max_batch_size,
            "longest_seq_len": r.estimate.longest_seq,
            "longest_context": r.estimate.longest_context,
            "tokens_per_s": r.tokens_per_s,
            "bound": r.bound,
            "decode_compute_bound_batch": (
                r.estimate.speed.decode_compute_bound_batch if r.estimate.speed else None
            ),
            "min_cards": r.min_cards[0] if r.min_cards else None,
            "min_cards_split": r.min_cards[1] if r.min_cards else None,
            "parallel": r.estimate.workload.parallel,
            "launch_price_usd": r.card.launch_price_usd,
            **power.json_fields(r.tokens_per_s, r.card, power.TOKENS),
        }
        for i, r in enumerate(ranked)
    ]


def render_ranking(
    m: TransformerModel, wl: Workload, ranked: list[Ranked], per_card: bool = False
) -> list[str]:
    word = {"train": "train tok/s", "generate": "decode tok/s"}.get(wl.mode, "prefill tok/s")
    lines = [
        model_line(m),
        _workload_line(wl, m, per_card),
        "",
        f"  {'#':>2} {'card':<30} {'memory':>10} {'peak':>10} {'verdict':<12} {'max batch':>9} "
        f"{'longest ' + _seq_word(wl):>16} {word:>13} {'bound':<7} {'cards needed':>16}",
    ]
    for i, r in enumerate(ranked):
        e = r.estimate
        tps = f"{r.tokens_per_s:,.0f}" if r.tokens_per_s else "-"
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
    scored = [(r.card, r.tokens_per_s, r.estimate.fits) for r in ranked]
    lines += power.ranking_lines(scored, power.TOKENS, 30, 10)
    return [visible(line) for line in lines]


def workload_line(wl: Workload, m: TransformerModel) -> str:
    """One line saying what the workload is (the TUI's detail view shows it too)."""
    return _workload_line(wl, m)
