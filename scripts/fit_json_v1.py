"""`gputui fit --json` schema_version 1 -> 2: the old three shapes in the new one.

Used by `fit_golden.py compare DIR --upgrade` to show that a document saved before
the change of shape carries the same numbers as the one printed now. `upgrade`
moves every old field to its new place and drops nothing silently: the fields v1
had and v2 does not are checked to be derivable (`fits_somewhere`), the fields v2
adds are what `added_paths` lists.
"""

from __future__ import annotations

from typing import Any

_SPEED = ("step_time_s", "samples_per_s", "peak_tflops_used")
_BOUNDS = ("bound", "time_share_by_bound", "layer_bounds")
_LAYER_KEYS = ("layers", "generator_layers", "discriminator_layers")


def upgrade(old: dict[str, Any]) -> dict[str, Any]:
    """A v1 document in the v2 shape (only what v1 carried)."""
    if old.get("kind") == "transformer":  # an HF config / folder / GGUF: one model at the top
        return _single_transformer(old)
    head = {k: old[k] for k in ("models_file", "models_file_origin", "backend") if k in old}
    if "rankings" in old:  # --all-cards
        models = [_graph_ranking(r) for r in old["rankings"]]
        models += [_transformer_ranking(r) for r in old.get("transformer_rankings", [])]
        return {**head, "mode": "all-cards", "all_fit": old["all_fit"], "models": models}
    by_name: dict[str, list[dict[str, Any]]] = {}
    for check in old["models"]:  # one per (GPU, model), GPU by GPU
        by_name.setdefault(check["name"], []).append(check)
    models = [_graph_check(checks, old["mig_advice"].get(n, [])) for n, checks in by_name.items()]
    models += [_transformer(t, parallel_choice=None) for t in old.get("transformers", [])]
    keep = ("gpus", "unavailable_gpus", "all_fit")
    return {**head, "mode": "check", **{k: old[k] for k in keep}, "models": models}


def _precision_row(e: dict[str, Any]) -> dict[str, Any]:
    row = {k: v for k, v in e.items() if k not in _SPEED + _BOUNDS}
    row["speed"] = None if e["step_time_s"] is None else {k: e[k] for k in _SPEED + _BOUNDS}
    return row


def _graph_check(checks: list[dict[str, Any]], advice: list[str]) -> dict[str, Any]:
    first = checks[0]
    facts = {
        "type": first["kind"],
        **{k: first[k] for k in ("params", "trainable_params", "non_trainable_params")},
        "flops_per_sample": first["flops_per_sample"],
        "warnings": first["warnings"],
        **{k: first[k] for k in _LAYER_KEYS if k in first},
    }
    estimates = []
    for c in checks:
        rows = [_precision_row(e) for e in c["estimates"]]
        chosen = next((r for r in rows if r["precision"] == c["recommended_precision"]), rows[0])
        estimates.append(
            {
                "gpu": c["gpu"],
                **chosen,
                "recommended_precision": c["recommended_precision"],
                "recommendation_reason": c["recommendation_reason"],
                "peak_tensors": c["peak_tensors"],
                "precisions": rows,
            }
        )
    workload = {k: first[k] for k in ("mode", "batch_size", "optimizer", "backend", "software")}
    return {
        "name": first["name"],
        "kind": "graph",
        "model": facts,
        "workload": workload,
        "parallel_choice": None,
        "estimates": estimates,
        "ranking": None,
        "mig_advice": advice,
    }


def _graph_ranking(r: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": r["model"],
        "kind": "graph",
        "workload": {"software": r["software"]},
        "parallel_choice": None,
        "speed_assumed": {k: r[k] for k in ("efficiency_assumed", "roofline_efficiency")},
        "estimates": None,
        "ranking": r["cards"],
    }


def _transformer(t: dict[str, Any], parallel_choice: Any) -> dict[str, Any]:
    return {
        "name": t["name"],
        "kind": "transformer",
        "model": t["model"],
        "workload": t["workload"],
        "parallel_choice": parallel_choice,
        "estimates": t["estimates"],
        "ranking": None,
        "mig_advice": t["mig_advice"],
    }


def _transformer_ranking(r: dict[str, Any]) -> dict[str, Any]:
    # v1's fits_somewhere is any card's `fits`: derivable, so v2 leaves it out
    assert r["fits_somewhere"] == any(c["fits"] for c in r["cards"])
    return {
        "name": r["model"],
        "kind": "transformer",
        "model": r["transformer"],
        "workload": r["workload"],
        "parallel_choice": None,
        "estimates": None,
        "ranking": r["cards"],
    }


def _single_transformer(old: dict[str, Any]) -> dict[str, Any]:
    if "model" not in old:  # no GPU could be checked
        return {"mode": "check", "unavailable_gpus": old["unavailable_gpus"]}
    entry = {"name": old["model"]["name"], "kind": "transformer", "model": old["model"]}
    entry["workload"] = old["workload"]
    if "ranking" in old:
        entry |= {"estimates": None, "ranking": old["ranking"]}
        return {"mode": "all-cards", "all_fit": old["all_fit"], "models": [entry]}
    entry |= {
        "parallel_choice": old["parallel_choice"],
        "estimates": old["estimates"],
        "ranking": None,
        "mig_advice": old["mig_advice"],
    }
    return {
        "mode": "check",
        "backend": old["workload"]["backend"],
        "gpus": [e["gpu"] for e in old["estimates"]],
        "unavailable_gpus": old["unavailable_gpus"],
        "all_fit": old["all_fit"],
        "models": [entry],
    }


def mismatch(upgraded: Any, new: Any, path: str = "") -> str | None:
    """Where `upgraded` differs from `new` (every field it has, new has, equal), or None."""
    if isinstance(upgraded, dict):
        if not isinstance(new, dict):
            return f"{path or '/'}: an object -> {type(new).__name__}"
        for key, value in upgraded.items():
            if key not in new:
                return f"{path}/{key}: missing now"
            found = mismatch(value, new[key], f"{path}/{key}")
            if found:
                return found
        return None
    if isinstance(upgraded, list):
        if not isinstance(new, list) or len(new) != len(upgraded):
            return f"{path}: a list of {len(upgraded)} -> {new!r:.60}"
        for i, (a, b) in enumerate(zip(upgraded, new, strict=True)):
            found = mismatch(a, b, f"{path}/{i}")
            if found:
                return found
        return None
    return None if upgraded == new else f"{path}: {upgraded!r:.40} -> {new!r:.40}"


def added_paths(upgraded: Any, new: Any, path: str = "") -> set[str]:
    """The fields `new` has that `upgraded` does not (list positions written as *)."""
    out: set[str] = set()
    if isinstance(upgraded, dict) and isinstance(new, dict):
        for key, value in new.items():
            here = f"{path}/{key}"
            if key not in upgraded:
                out.add(here)
            else:
                out |= added_paths(upgraded[key], value, here)
    elif isinstance(upgraded, list) and isinstance(new, list):
        for a, b in zip(upgraded, new, strict=False):
            out |= added_paths(a, b, f"{path}/*")
    return out
