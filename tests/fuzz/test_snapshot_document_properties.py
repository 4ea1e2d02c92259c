"""Hostile `gputui snapshot --json` documents: the decoder answers with a Snapshot or one line.

The damage and the judgement are family_snapshot_document.py's (benchmarks/fuzz.py runs
the long campaign on the shipped scenarios' polls); here the documents start from
generated snapshots, every record and field in play.
"""

from __future__ import annotations

from random import Random

import family_snapshot_document as family
from hypothesis import given
from hypothesis import strategies as st
from properties import bounded, run_case

from gputui.model.snapshot import Snapshot
from gputui.model.snapshot_encode import snapshot_to_dict
from tests.snapshot_strategies import SNAPSHOTS


@bounded(50)
@given(SNAPSHOTS, st.randoms(use_true_random=False))
def test_a_damaged_document_is_decoded_soundly_or_refused_in_one_line(
    snapshot: Snapshot, rng: Random
) -> None:
    text = family.damage(rng, snapshot_to_dict(snapshot))
    outcome = run_case(family.run_case, text, seconds=30)
    assert outcome.kind in ("ok", "rejected"), outcome.detail


@bounded(40)
@given(st.randoms(use_true_random=False))
def test_a_damaged_scenario_poll_is_decoded_soundly_or_refused(rng: Random) -> None:
    outcome = run_case(family.run_case, family.make_case(rng), seconds=30)
    assert outcome.kind in ("ok", "rejected"), outcome.detail
