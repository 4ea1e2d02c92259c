"""Functional graphs in the models TOML from the fuzz family (references, blocks, names).

The generator builds every graph valid and plants faults it knows: a graph with
none is accepted, one with a planted fault is one UserError line, and blocks
nested past the limit say so rather than "calls itself".
"""

from __future__ import annotations

from random import Random

import family_toml_graph as fam
import generators as gen
import properties
from hypothesis import given
from hypothesis import strategies as st

SETTINGS = properties.bounded(60)


def _run(case: fam.GraphCase) -> gen.Outcome:
    return properties.run_case(fam.run_case, case, 10.0)


@SETTINGS
@given(rng=st.randoms(use_true_random=False))
def test_graphs_are_accepted_exactly_when_nothing_is_planted(rng: Random) -> None:
    case = fam.make_case(rng)
    outcome = _run(case)
    expected = "rejected" if case.planted else "ok"
    assert outcome.kind == expected, (outcome, case.planted, case.text)


def test_a_chain_past_the_depth_limit_is_reported_as_depth() -> None:
    deep = []
    for i in range(400):
        case = fam.make_case(Random(f"toml_graph:0:{i}"))
        if case.depth_fault and len(case.planted) == 1:
            deep.append(case)
    assert deep, "the generator plants too-deep chains"
    for case in deep[:5]:
        outcome = _run(case)
        assert outcome.kind == "rejected" and "blocks nest deeper than 16 levels" in outcome.detail
