"""`gputui fit --json` schema_version 2 -> 3: each kind's ranking row and speed_assumed
in the one shape of every kind.

Used by `fit_golden.py compare DIR --upgrade` (after fit_json_v1 for an older
document) to show that a document saved before the change carries the same numbers
as the one printed now: every v2 field is moved to its v3 place, none is dropped.
"""

from __future__ import annotations

from typing import Any

# v2 field -> v3 field, for each kind's ranking row ("kind_facts/x": into the nested object)
_GRAPH_ROW = {
    "samples_per_s": "throughput",
    "samples_per_s_floor": "throughput_floor",
    "samples_per_s_per_1000_usd": "throughput_per_1000_usd",
    "samples_per_s_per_watt": "throughput_per_watt",
    "joules_per_1000_samples": "energy_at_power_limit",
    "time_share_by_bound": "kind_facts/time_share_by_bound",
}
_TRANSFORMER_ROW = {
    "tokens_per_s": "throughput",
    "tokens_per_s_per_1000_usd": "throughput_per_1000_usd",
    "tokens_per_s_per_watt": "throughput_per_watt",
    "wh_per_1m_tokens": "energy_at_power_limit",
    "min_cards": "cards_needed",
    "min_cards_split": "cards_split",
    "decode_compute_bound_batch": "kind_facts/decode_compute_bound_batch",
    "parallel": "kind_facts/parallel",
}


def upgrade(old: dict[str, Any]) -> dict[str, Any]:
    """A v2 document in the v3 shape (only what v2 carried)."""
    return {**old, "models": [_model(m) for m in old.get("models", [])]}


def _model(m: dict[str, Any]) -> dict[str, Any]:
    graph = m.get("kind") == "graph"
    out = {**m, "speed_assumed": _speed_assumed(m.get("speed_assumed"), graph)}
    if m.get("ranking") is not None:
        moves = _GRAPH_ROW if graph else _TRANSFORMER_ROW
        out["ranking"] = [_row(r, moves) for r in m["ranking"]]
    return out


def _row(r: dict[str, Any], moves: dict[str, str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    facts: dict[str, Any] = {}
    for key, value in r.items():
        new = moves.get(key, key)
        if new.startswith("kind_facts/"):
            facts[new.removeprefix("kind_facts/")] = value
        else:
            out[new] = value
    out["kind_facts"] = facts
    return out


def _speed_assumed(s: dict[str, Any] | None, graph: bool) -> dict[str, Any] | None:
    if s is None:
        return None
    if graph:  # the roofline's efficiencies were `roofline_efficiency`, the fallback's the top
        return {
            "efficiency_assumed": s["roofline_efficiency"],
            "kind_facts": {"no_roofline_efficiency": s["efficiency_assumed"]},
        }
    return {**s, "kind_facts": {}}
