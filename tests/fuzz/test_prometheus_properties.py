"""Answers of a fake Prometheus, from the fuzz family's generator: each is read or one line.

The same generator as `benchmarks/fuzz.py --families prometheus`, with bounded
example counts and without the slow cases (a drip that runs into the 5 s
deadline, bodies over the 64 MiB cap: tests/sources/prometheus/test_prometheus_responses.py
has those).
"""

from __future__ import annotations

from random import Random

import family_prometheus as family
import generators as gen
import properties
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

SETTINGS = properties.bounded(40)
# A seed, not st.randoms(): the answers carry the time, so their length (which the byte
# mutations draw a cut from) differs between runs, and hypothesis would see the same
# choices lead elsewhere ("inconsistent data generation").
SEEDS = st.integers(0, 2**32 - 1)


def _run(case: family.Case) -> gen.Outcome:
    return properties.run_case(family.run_case, case, 20.0)


@SETTINGS
@given(seed=SEEDS)
def test_valid_answers_show_every_value_as_sent(seed: int) -> None:
    rng = Random(seed)
    case = family.Case(family.fleet(rng), "snapshot-json", "", None, "none")
    case.expect = [
        (g.host, g.index, family.SAMPLE_METRICS[m][0], float(v))
        for g in case.gpus
        for m, v in g.values.items()
        if m in family.SAMPLE_METRICS
    ]
    assert _run(case) == gen.OK, family.case_text(case)


@SETTINGS
@given(seed=SEEDS)
def test_mutated_answers_are_read_or_one_line_never_a_wrong_accept(seed: int) -> None:
    rng = Random(seed)
    case = family.make_case(rng, slow=False)
    outcome = _run(case)
    assert outcome.kind in ("ok", "rejected"), (outcome, family.case_text(case))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=SEEDS)
def test_values_that_are_not_readings_are_na(seed: int) -> None:
    rng = Random(seed)
    case = family.Case(family.fleet(rng), "snapshot-json", "", None, "none")
    family._plant_values(rng, case)
    outcome = _run(case)
    assert outcome == gen.OK, (outcome, family.case_text(case))


def test_the_generator_reaches_both_outcomes_and_plants_both_kinds() -> None:
    """A generator that only produced rejections (or only valid answers) would test little."""
    cases = [family.make_case(Random(f"prometheus:0:{i}"), slow=False) for i in range(60)]
    assert {c.planted for c in cases} == {"", "na", "reject"}
    kinds = {_run(c).kind for c in cases[:30]}
    assert kinds == {"ok", "rejected"}
