"""A transformer's JSON rows: one estimate per GPU (its ranking rows are
fit.report.ranking_json's, as every kind's)."""

from __future__ import annotations

from typing import Any

from gputui.fit.core.roofline import EFFICIENCY, LAUNCH_S
from gputui.fit.core.speed import Speed, unknown_fields
from gputui.fit.report.memory_fields import memory_fields
from gputui.fit.report.targets import target_dict
from gputui.fit.transformer.estimate import Estimate


def speed_dict(s: Speed | None) -> dict[str, Any] | None:
    if s is None:
        return None
    return {
        **unknown_fields(s),
        "rough": True,
        "model": "roofline",
        "decode_tokens_per_s": s.decode_tokens_per_s,
        "prefill_tokens_per_s": s.prefill_tokens_per_s,
        "train_tokens_per_s": s.train_tokens_per_s,
        "decode_bound": s.bound("decode"),
        "prefill_bound": s.bound("prefill"),
        "train_bound": s.bound("train"),
        "decode_compute_bound_batch": s.decode_compute_bound_batch,
        "compute_precision": s.precision,
        "basis": s.basis,
        "tflops_used": s.peak_tflops,
        "bandwidth_gbs": s.bandwidth_gbs,
        "efficiency_assumed": dict(EFFICIENCY),
        "launch_overhead_s": LAUNCH_S,
    }


def estimate_dict(e: Estimate) -> dict[str, Any]:
    return {
        "gpu": target_dict(e.target),
        **memory_fields(e),
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
