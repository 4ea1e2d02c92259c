"""Damaged recordings: read soundly or refused in one line, never changed by a recorder.

The damage and the judgement are family_recording.py's (benchmarks/fuzz.py runs the long
campaign)."""

from __future__ import annotations

from random import Random

import family_recording as family
from hypothesis import given
from hypothesis import strategies as st
from properties import bounded, run_case


@bounded(40)
@given(st.randoms(use_true_random=False))
def test_a_damaged_recording_is_read_soundly_or_refused_in_one_line(rng: Random) -> None:
    outcome = run_case(family.run_case, family.make_case(rng), seconds=60)
    assert outcome.kind in ("ok", "rejected"), outcome.detail
