"""A hostile Prometheus peer, from the fuzz family's generator: read as sent, or one line.

The same generator as `benchmarks/fuzz.py --families prometheus-peer` with a bounded
number of examples: redirects, drips and delays against --deadline, Content-Length lies,
compressed bodies, more series than the bound, envelopes the streaming reader must get right.
"""

from __future__ import annotations

from random import Random

import family_prometheus_peer as family
import properties
from hypothesis import given
from hypothesis import strategies as st

SETTINGS = properties.bounded(20)  # the fault kinds: the fixed seeds below
SEEDS = st.integers(0, 2**32 - 1)  # a seed, as in test_prometheus_properties.py


def _run(case: family.Case) -> str:
    outcome = properties.run_case(family.run_case, case, 20.0)
    assert outcome.kind in ("ok", "rejected"), (outcome, family.case_text(case))
    return outcome.kind


@SETTINGS
@given(seed=SEEDS)
def test_a_hostile_peer_is_read_or_one_line_never_a_wrong_accept(seed: int) -> None:
    _run(family.make_case(Random(seed)))


def test_the_generator_reaches_both_outcomes_and_every_fault_kind() -> None:
    cases = [family.make_case(Random(f"prometheus-peer:0:{i}")) for i in range(80)]
    assert any(c.redirect for c in cases) and any(c.deadline for c in cases)
    assert any(c.bound for c in cases) and any("Content-" in c.mutation for c in cases)
    assert {c.planted for c in cases} == {"", "reject"}
    assert {_run(c) for c in cases[:24]} == {"ok", "rejected"}
