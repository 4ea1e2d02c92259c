"""HF config.json from the fuzz family: each run is an answer with exit 0/1 or one line, exit 2.

The same generator as `python benchmarks/fuzz.py --families hf`, with a bounded
number of examples; a planted invalid value that gputui accepts fails here.
"""

from __future__ import annotations

from random import Random

import family_hf as fam
import generators as gen
import properties
from hypothesis import given
from hypothesis import strategies as st

SETTINGS = properties.bounded(60)


def _check(case: fam.Case) -> gen.Outcome:
    return properties.run_case(fam.run_case, case, 30.0)


@SETTINGS
@given(rng=st.randoms(use_true_random=False))
def test_mutated_hf_configs_are_answered_or_refused_in_one_line(rng: Random) -> None:
    case = fam.make_case(rng)
    outcome = _check(case)
    assert outcome.kind in ("ok", "rejected"), (outcome, fam.case_text(case)[:2000])


@SETTINGS
@given(seed=st.integers(0, 2**32))
def test_planted_invalid_configs_are_refused(seed: int) -> None:
    case = next(c for i in range(1000) if (c := fam.make_case(Random(f"{seed}:{i}"))).planted)
    outcome = _check(case)
    assert outcome.kind == "rejected", (outcome, fam.case_text(case)[:2000])


def test_the_real_configs_are_accepted() -> None:
    for path in fam.BASES:
        case = fam.Case(fam.json.loads(path.read_text()), ["--gpu", "RTX 3090", "--json"])
        assert _check(case) == gen.OK, path.name
