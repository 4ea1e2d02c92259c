"""Keras files from the fuzz family: each runs cleanly or is one UserError line.

The same generator as `benchmarks/fuzz.py --families keras`, with a bounded
number of examples; the real fixtures changed only the ways Keras accepts
(layers reordered, config names unlike the model's) keep Keras' own counts.
"""

from __future__ import annotations

import copy
import json
from random import Random

import family_keras as fam
import generators as gen
import properties
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gputui.fit.importers.keras import keras_table
from gputui.fit.importers.modelsfile import parse_model_table

SETTINGS = properties.bounded(25)


def _run(case: fam.KerasCase) -> gen.Outcome:
    return properties.run_case(fam.run_case, case, 10.0)


@SETTINGS
@given(rng=st.randoms(use_true_random=False))
def test_damaged_keras_files_run_cleanly_or_are_one_line(rng: Random) -> None:
    case = fam.make_case(rng)
    # character-level damage too: digit runs past Python's limit, broken JSON
    outcome = _run(case)
    assert outcome.kind in ("ok", "rejected"), (outcome, case.fixture, case.planted)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rng=st.randoms(use_true_random=False))
def test_what_keras_accepts_keeps_keras_counts(rng: Random) -> None:
    fixtures = [f for f in fam._fixtures() if not f[0].startswith(("densenet", "inception"))]
    name, text, _ = rng.choice(fixtures)
    path = fam.FIXTURES / name
    counts = json.loads(path.with_name(path.stem + ".counts.json").read_text(encoding="utf-8"))
    shapes = counts.get("input_shapes", {})
    skip = "custom_layer_params" in counts
    data = json.loads(text)
    changed = copy.deepcopy(data)
    fam._keras_rules(rng, changed)
    before = keras_table(data, name, input_shapes=shapes, skip_unknown=skip)
    after = keras_table(changed, name, input_shapes=shapes, skip_unknown=skip)
    spec_before = parse_model_table(before.table, name)
    spec_after = parse_model_table(after.table, name)
    assert spec_after.params == spec_before.params
    assert spec_after.trainable_params == spec_before.trainable_params
    if not skip:
        assert spec_after.params == counts["total"]


def test_the_generator_reaches_every_outcome() -> None:
    """Valid files accepted, planted faults refused: a generator doing only one tests little."""
    seen = set()
    for i in range(40):
        case = fam.make_case(Random(f"keras:0:{i}"))
        if case.text is not None:
            continue
        outcome = _run(case)
        assert outcome.kind in ("ok", "rejected"), (i, outcome, case.planted)
        seen.add((bool(case.planted), outcome.kind))
    assert {(False, "ok"), (True, "rejected")} <= seen
