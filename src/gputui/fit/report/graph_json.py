"""A layer model's JSON parts: its facts, its workload, one estimate per GPU (the
recommended precision's answer, every precision beside it); its ranking rows are
fit.report.ranking_json's, as every kind's."""

from __future__ import annotations

from typing import Any

from gputui.fit.core.batch import pow2_floor
from gputui.fit.core.phased import PhasedModel
from gputui.fit.core.speed import Speed, unknown_fields
from gputui.fit.graph.estimate import ModelCheck, PrecisionEstimate
from gputui.fit.importers.modelsfile import ModelSpec
from gputui.fit.report.graph_facts import model_layers, model_software_dict, peak_tensor_rows
from gputui.fit.report.memory_fields import memory_fields
from gputui.fit.report.targets import target_dict


def model_facts(model: ModelSpec | PhasedModel, include_layers: bool = True) -> dict[str, Any]:
    return {
        "type": model.kind,
        "params": model.params,
        "trainable_params": model.trainable_params,
        "non_trainable_params": model.params - model.trainable_params,
        "flops_per_sample": model.flops,
        "warnings": list(model.warnings),
        # a layer table only where asked (it is long); a phased front-end's facts always
        **(model_layers(model) if include_layers or not isinstance(model, ModelSpec) else {}),
    }


def workload(model: ModelSpec | PhasedModel, batch_size: int, backend: str) -> dict[str, Any]:
    return {
        "mode": model.mode,
        "batch_size": batch_size,
        "optimizer": model.optimizer,
        "backend": backend,
        "software": model_software_dict(model),
    }


def speed(s: Speed | None) -> dict[str, Any] | None:
    """The rough step time, and where it goes (fit.core.roofline) per model and per layer."""
    if s is None:
        return None
    prof = s.profile
    return {
        **unknown_fields(s),
        "step_time_s": s.step_time_s,
        "samples_per_s": s.samples_per_s,
        "peak_tflops_used": s.peak_tflops if s.phases else None,
        "bound": prof.bound if prof else None,
        "time_share_by_bound": prof.shares if prof else None,
        "layer_bounds": None
        if prof is None
        else [
            {
                "network": lt.network,
                "index": lt.layer,
                "layer": lt.label,
                "bound": lt.bound,
                "seconds": lt.seconds,
            }
            for lt in prof.layers
        ],
    }


def precision_row(e: PrecisionEstimate) -> dict[str, Any]:
    """One precision's answer on one GPU."""
    return {
        "precision": e.precision,
        "offered": e.offered,
        "reason": e.reason,
        "batch_size": e.batch_size,
        **memory_fields(e),
        "max_batch_size_pow2": pow2_floor(e.max_batch_size),
        "free_bytes": e.free_bytes,
        "verdict_free": e.verdict_free,
        "max_batch_size_free": e.max_batch_size_free,
        "max_batch_size_free_pow2": (
            pow2_floor(e.max_batch_size_free) if e.max_batch_size_free is not None else None
        ),
        "breakdown": e.breakdown.as_dict(),
        "speed": speed(e.speed),
    }


def check_dict(c: ModelCheck) -> dict[str, Any]:
    """The model on one GPU: the chosen precision's row (the recommended one, or the one
    asked for) with the recommendation, the tensors alive at its peak, and every row."""
    return {
        "gpu": target_dict(c.target),
        **precision_row(c.chosen),
        "warnings": [],
        "recommended_precision": c.recommended,
        "recommendation_reason": c.recommended_reason,
        "peak_tensors": peak_tensor_rows(c),
        "precisions": [precision_row(e) for e in c.estimates],
    }
