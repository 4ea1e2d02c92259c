"""The one JSON document `gputui fit --json` prints, for every model kind and mode.

Shape (docs/fit.md, JSON; the schema is docs/fit-schema.json): a header, the GPUs
checked, and `models[]`, one entry per model whatever its kind, each with its facts,
its workload and either `estimates[]` (one per GPU checked) or `ranking[]` (one per
catalog card, --all-cards). Bump SCHEMA_VERSION when a field changes meaning.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

from gputui.fit.core.ranking import Ranked
from gputui.fit.core.roofline import EFFICIENCY, LAUNCH_S
from gputui.fit.graph.estimate import ModelCheck
from gputui.fit.importers.modelsfile import ModelSpec
from gputui.fit.report import graph_json, transformer_json
from gputui.fit.report.assumptions import assumptions
from gputui.fit.report.ranking_json import ranking_rows
from gputui.fit.report.targets import target_dict, unavailable_dict
from gputui.fit.transformer.report import model_dict, workload_dict

# 1: three shapes (models[] / transformers[], or model + estimates at the top); 2: one;
# 3: one ranking row and one speed_assumed for every kind, the kind's own in kind_facts
SCHEMA_VERSION = 3


def header(models_file: str | None, origin: str | None, backend: str, mode: str) -> dict[str, Any]:
    """The fields every document starts with; `mode` is "check" or "all-cards"."""
    return {
        "schema_version": SCHEMA_VERSION,
        "mode": mode,
        "models_file": models_file,
        "models_file_origin": origin,
        "backend": backend,
    }


def speed_assumed(kind_facts: dict[str, Any]) -> dict[str, Any]:
    """What every kind's speed assumes (the roofline of fit.core.roofline), the same keys
    for every kind; what only one kind assumes is in `kind_facts`."""
    return {
        "model": "roofline",
        "efficiency_assumed": dict(EFFICIENCY),
        "launch_overhead_s": LAUNCH_S,
        "kind_facts": kind_facts,
    }


def graph_entry(
    model: ModelSpec,
    *,
    batch_size: int,
    backend: str,
    checks: Sequence[ModelCheck] | None = None,
    ranked: Sequence[Ranked[Any]] | None = None,
    mig_advice: Sequence[str] = (),
) -> dict[str, Any]:
    """A layer model: `checks` (one per GPU) for a check, `ranked` for --all-cards."""
    return {
        "name": model.name,
        "kind": "graph",
        "model": graph_json.model_facts(model, include_layers=ranked is None),
        "workload": graph_json.workload(model, batch_size, backend),
        "assumptions": assumptions(model.runtime, model.runtime_source),
        "parallel_choice": None,
        "speed_assumed": speed_assumed({}),
        "estimates": None if checks is None else [graph_json.check_dict(c) for c in checks],
        "ranking": None if ranked is None else ranking_rows(ranked),
        "mig_advice": list(mig_advice),
    }


def transformer_entry(
    name: str,
    model: Any,
    workload: Any,
    *,
    estimates: Sequence[Any] | None = None,
    ranked: Sequence[Ranked[Any]] | None = None,
    parallel_choice: dict[str, Any] | None = None,
    mig_advice: Sequence[str] = (),
) -> dict[str, Any]:
    """A transformer (HF config, GGUF, a models file's table); `workload` None when no
    GPU could be checked and none was built."""
    return {
        "name": name,
        "kind": "transformer",
        "model": model_dict(model),
        "workload": None if workload is None else workload_dict(workload, model),
        "assumptions": assumptions(
            "pytorch",
            "Hugging Face transformers (PyTorch)",
            loop=workload.loop if workload is not None and workload.mode == "train" else None,
            engine=workload.engine
            if workload is not None and workload.mode == "generate"
            else None,
        ),
        "parallel_choice": parallel_choice,
        "speed_assumed": speed_assumed({}),
        "estimates": None
        if estimates is None
        else [transformer_json.estimate_dict(e) for e in estimates],
        "ranking": None if ranked is None else ranking_rows(ranked),
        "mig_advice": list(mig_advice),
    }


def document(
    head: dict[str, Any],
    models: list[dict[str, Any]],
    *,
    all_fit: bool,
    targets: Sequence[Any] = (),
    unavailable: Sequence[Any] = (),
) -> dict[str, Any]:
    return {
        **head,
        "gpus": [target_dict(t) for t in targets],
        "unavailable_gpus": [unavailable_dict(u) for u in unavailable],
        "all_fit": all_fit,
        "models": models,
    }


def dumps(doc: dict[str, Any]) -> str:
    return json.dumps(json_safe(doc), indent=2, allow_nan=False)


def json_safe(value: Any) -> Any:
    """`value` with every non-finite float as null: JSON has no infinity (a model with no
    work has an unbounded samples/s), and `json.dumps(allow_nan=False)` would raise."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value
