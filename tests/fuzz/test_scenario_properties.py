"""Scenario files from the fuzz generators: each loads and polls cleanly or is one UserError line.

Bounded example counts keep this to a few seconds; `make fuzz` runs the same
generators for as long as you like.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from random import Random

import generators as gen
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _check(text: str) -> gen.Outcome:
    with tempfile.TemporaryDirectory() as tmp, gen.no_hang():
        return gen.check_scenario(text, Path(tmp))


@SETTINGS
@given(rng=st.randoms(use_true_random=False))
def test_valid_scenarios_load_and_poll_cleanly(rng: Random) -> None:
    text = gen.to_toml(gen.scenario(rng))
    outcome = _check(text)
    assert outcome == gen.OK, (outcome, text)


@SETTINGS
@given(rng=st.randoms(use_true_random=False))
def test_mutated_fields_load_cleanly_or_are_one_line(rng: Random) -> None:
    text = gen.to_toml(gen.mutate_scenario(rng, gen.scenario(rng)))
    outcome = _check(text)
    assert outcome.kind in ("ok", "rejected"), (outcome, text)


@SETTINGS
@given(rng=st.randoms(use_true_random=False))
def test_damaged_text_loads_cleanly_or_is_one_line(rng: Random) -> None:
    text = gen.mutate_text(rng, gen.to_toml(gen.scenario(rng)))
    outcome = _check(text)
    assert outcome.kind in ("ok", "rejected"), (outcome, text)


def test_the_generators_reach_both_outcomes() -> None:
    """A generator that only ever produced rejections (or only valid files) would test little."""
    kinds = {_check(gen.scenario_case(Random(f"scenario:0:{i}"))).kind for i in range(40)}
    assert kinds == {"ok", "rejected"}
