"""safetensors headers from the fuzz generator (tests/fuzz/family_safetensors.py) in a model
folder through `gputui fit`: valid ones are estimated, planted faults are refused in one
line, nothing crashes.

Bounded example counts keep this to seconds; `python benchmarks/fuzz.py --families
safetensors` runs the same generator for as long as you like.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from random import Random

import family_safetensors as fam
import generators as gen
import properties
from hypothesis import given
from hypothesis import strategies as st

SETTINGS = properties.bounded(40)


def _run(case: fam.Case) -> gen.Outcome:
    return properties.run_case(fam.run_case, case, 10.0)


@SETTINGS
@given(rng=st.randoms(use_true_random=False))
def test_valid_folders_are_estimated(rng: Random) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        data = fam._valid_bytes(rng, Path(tmp))
    assert _run(fam.Case(data)) == gen.OK


@SETTINGS
@given(rng=st.randoms(use_true_random=False))
def test_every_case_is_accepted_cleanly_or_refused_in_one_line(rng: Random) -> None:
    case = fam.make_case(rng)
    outcome = _run(case)
    assert outcome.kind in ("ok", "rejected"), (outcome, case.planted)


@SETTINGS
@given(rng=st.randoms(use_true_random=False))
def test_planted_faults_are_refused(rng: Random) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        header, body = fam.split(fam._valid_bytes(rng, Path(tmp)))
    data, what = fam._plant(rng, header, body)
    outcome = _run(fam.Case(data, [what] if what else []))
    assert outcome.kind == ("rejected" if what else "ok"), (what, outcome)


def test_the_generator_reaches_both_outcomes() -> None:
    kinds = {_run(fam.make_case(Random(f"safetensors:0:{i}"))).kind for i in range(30)}
    assert kinds == {"ok", "rejected"}
