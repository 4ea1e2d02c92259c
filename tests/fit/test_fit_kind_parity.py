"""One fit engine, checked by its structure: the front-ends describe their models, and
speed, ranking and report concepts exist once.

- No public class or function of the speed, ranking or report modules is defined on
  both front-ends (graph/ or report/graph_* against transformer/ or report/transformer_*):
  a second copy is a second engine that drifts. Model descriptions and workloads may
  differ, so only those modules are compared.
- `fit --all-cards --json` gives a Keras file and an HF config ranking rows and a
  `speed_assumed` with the same keys and value types, the kind's own facts only in
  `kind_facts`.
"""

from __future__ import annotations

import ast
import contextlib
import io
import json
from pathlib import Path
from typing import Any

import pytest

from gputui.cli import main

REPO = Path(__file__).resolve().parents[2]
FIT = REPO / "src" / "gputui" / "fit"

# the speed, ranking and report modules of each front-end
GRAPH = ("graph/step_ops.py", "graph/ranking.py", "report/graph_*.py")
TRANSFORMER = (
    "transformer/step_ops.py",
    "transformer/workload_speed.py",
    "transformer/ranking.py",
    "transformer/report.py",
    "report/transformer_*.py",
)
# Pairs still defined on both, each with why; the test fails once one is merged, so
# this list only shrinks (model descriptions and workloads may differ by kind).
KEPT: dict[str, str] = {}


def public_names(patterns: tuple[str, ...]) -> dict[str, list[str]]:
    """Top-level public classes and functions of the modules `patterns` name."""
    found: dict[str, list[str]] = {}
    for pattern in patterns:
        for path in sorted(FIT.glob(pattern)):
            for node in ast.parse(path.read_text(encoding="utf-8")).body:
                defines = isinstance(node, (ast.FunctionDef, ast.ClassDef))
                if defines and not node.name.startswith("_"):
                    found.setdefault(node.name, []).append(str(path.relative_to(FIT)))
    return found


def test_no_speed_ranking_or_report_concept_is_defined_on_both_front_ends() -> None:
    graph, transformer = public_names(GRAPH), public_names(TRANSFORMER)
    assert graph and transformer  # the patterns still name modules
    both = {n: graph[n] + transformer[n] for n in set(graph) & set(transformer)}
    assert set(both) - set(KEPT) == set(), f"defined on both front-ends: {both}"
    assert set(KEPT) - set(both) == set(), "merged: take it off KEPT"


# The fleet is one path for every kind (tests/fit/test_fleet.py): no name of its modules
# says a kind, so a per-kind pair (rank_x / rank_x_transformer, x_graph / x_llm) cannot return.
FLEET = ("fleet.py", "fleet_rank.py", "report/fleet.py")
KIND_WORDS = ("graph", "layer", "llm", "transformer", "torch", "keras")


def test_the_fleet_defines_nothing_per_kind() -> None:
    per_kind = []
    for name in FLEET:
        path = FIT / name
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            named = isinstance(node, (ast.FunctionDef, ast.ClassDef))
            if named and any(word in node.name.lower() for word in KIND_WORDS):
                per_kind.append(f"{name}: {node.name}")
    assert per_kind == [], f"the fleet has per-kind code: {per_kind}"


def _fit_json(*argv: str) -> dict[str, Any]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = main(["fit", *argv, "--all-cards", "--json"])
    assert code in (0, 1)
    (entry,) = json.loads(out.getvalue())["models"]
    assert isinstance(entry, dict)
    return entry


def json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    return {str: "string", list: "array", dict: "object"}.get(type(value), "null")


def shape_difference(a: Any, b: Any, path: str) -> str | None:
    """Where two values differ in keys or JSON type (a null matches any type: a figure one
    kind does not know); inside `kind_facts` the kinds may differ."""
    if path.endswith("/kind_facts"):
        return None if json_type(a) == json_type(b) == "object" else f"{path}: not objects"
    if a is None or b is None:
        return None
    if json_type(a) != json_type(b):
        return f"{path}: {json_type(a)} vs {json_type(b)}"
    if isinstance(a, dict):
        if set(a) != set(b):
            return f"{path}: keys {sorted(set(a) ^ set(b))} on one kind only"
        for key in a:
            found = shape_difference(a[key], b[key], f"{path}/{key}")
            if found:
                return found
    return None


@pytest.fixture(scope="module")
def entries() -> tuple[dict[str, Any], dict[str, Any]]:
    keras = _fit_json(str(REPO / "tests" / "fixtures" / "keras" / "mnist_convnet.json"))
    hf = _fit_json(str(REPO / "examples" / "llm" / "gpt2.json"))
    assert (keras["kind"], hf["kind"]) == ("graph", "transformer")
    return keras, hf


def test_speed_assumed_has_one_shape(entries: tuple[dict[str, Any], dict[str, Any]]) -> None:
    keras, hf = entries
    assert shape_difference(keras["speed_assumed"], hf["speed_assumed"], "speed_assumed") is None
    nested = {k for e in entries for k, v in e["speed_assumed"].items() if isinstance(v, dict)}
    # the roofline's efficiencies (the same keys for both), and the kind's own
    assert nested == {"efficiency_assumed", "kind_facts"}


def test_ranking_rows_have_one_shape(entries: tuple[dict[str, Any], dict[str, Any]]) -> None:
    keras, hf = entries
    rows = keras["ranking"] + hf["ranking"]
    assert len({frozenset(r) for r in rows}) == 1  # the same keys in every row of both kinds
    for row in rows[1:]:
        assert shape_difference(rows[0], row, "ranking/*") is None
    # every key's type, where some row of each kind knows it, is one type
    for key in rows[0]:
        types = [{json_type(r[key]) for r in e["ranking"]} - {"null"} for e in entries]
        if all(types):
            assert types[0] == types[1], key
    nested = {k for r in rows for k, v in r.items() if isinstance(v, dict)}
    assert nested == {"kind_facts"}
    assert {r["throughput_unit"] for r in keras["ranking"]} == {"samples/s"}
    assert {r["throughput_unit"] for r in hf["ranking"]} == {"tokens/s"}


def test_an_unknown_speed_says_why_for_both_kinds(
    entries: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    """One policy for the reason: a row without a throughput names the figure it lacks."""
    for entry in entries:
        unknown = [r for r in entry["ranking"] if r["throughput"] is None]
        assert unknown, entry["kind"]  # the catalog has cards without the figures
        for row in unknown:
            assert row["speed_unknown_reason"], (entry["kind"], row["card"])
        known = [r for r in entry["ranking"] if r["throughput"] is not None]
        assert all(r["speed_unknown_reason"] is None for r in known)


def test_a_derived_card_figure_is_marked_for_both_kinds(
    entries: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    """A speed from a figure the catalog derives by an architecture rule says so, whatever
    the kind (the text marks it '~')."""
    for entry in entries:
        known = [r for r in entry["ranking"] if r["throughput"] is not None]
        assert all(isinstance(r["speed_figure_derived"], bool) for r in known), entry["kind"]
        assert any(r["speed_figure_derived"] for r in known), entry["kind"]
