"""GGUF files from the fuzz generator (tests/fuzz/family_gguf.py) through `gputui fit`:
valid ones are estimated, planted faults are refused in one line, nothing crashes.

Bounded example counts keep this to seconds; `python benchmarks/fuzz.py --families gguf`
runs the same generator for as long as you like.
"""

from __future__ import annotations

from random import Random

import family_gguf as fam
import generators as gen
import properties
from hypothesis import given, settings
from hypothesis import strategies as st

SETTINGS = properties.bounded(40)


def _run(case: fam.Case) -> gen.Outcome:
    return properties.run_case(fam.run_case, case, 10.0)


@SETTINGS
@given(rng=st.randoms(use_true_random=False))
def test_valid_files_are_estimated(rng: Random) -> None:
    meta, tensors = fam.model(rng)
    outcome = _run(fam.Case(fam.mk.gguf_bytes(meta, tensors)))
    assert outcome == gen.OK, outcome


@SETTINGS
@given(rng=st.randoms(use_true_random=False))
def test_every_case_is_accepted_cleanly_or_refused_in_one_line(rng: Random) -> None:
    case = fam.make_case(rng)
    outcome = _run(case)
    assert outcome.kind in ("ok", "rejected"), (outcome, case.planted)


@settings(max_examples=len(range(fam.FAULTS)) * 2, deadline=None)
@given(rng=st.randoms(use_true_random=False), fault=st.integers(0, fam.FAULTS - 1))
def test_each_planted_fault_is_refused(rng: Random, fault: int) -> None:
    meta, tensors = fam.model(rng)
    kw: dict[str, object] = {}
    what = fam._structural(rng, fault, meta, tensors, kw)
    outcome = _run(fam.Case(fam.mk.gguf_bytes(meta, tensors, **kw), [what]))
    assert outcome.kind == "rejected", (what, outcome)


def test_the_generator_reaches_both_outcomes() -> None:
    kinds = {_run(fam.make_case(Random(f"gguf:0:{i}"))).kind for i in range(30)}
    assert kinds == {"ok", "rejected"}
