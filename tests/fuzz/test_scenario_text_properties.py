"""Scenario files with control characters in every string field: `snapshot` never shows them raw.

The bounded counterpart of `python benchmarks/fuzz.py --families scenario_text`
(the same generator, tests/fuzz/family_scenario_text.py).
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from random import Random

import family_scenario_text as family
import generators as gen
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gputui.core.tomlsafe import parse_toml


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rng=st.randoms(use_true_random=False))
def test_snapshot_shows_planted_control_characters_visibly(rng: Random) -> None:
    case = family.make_case(rng)
    with tempfile.TemporaryDirectory() as tmp, gen.no_hang():
        outcome = family.run_case(case, Path(tmp))
    assert outcome.kind in ("ok", "rejected"), (outcome, family.case_text(case))


def test_every_case_plants_something_a_terminal_would_obey() -> None:
    """A generator that planted nothing would test nothing."""
    for i in range(30):
        text, planted = family.make_case(Random(f"scenario_text:0:{i}"))
        strings = family._strings(parse_toml(text, "case.toml"))
        assert planted and any(family.FORBIDDEN.search(s) for s in strings)
