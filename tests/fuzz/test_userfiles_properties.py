"""The settings file and the catalog cache folder under hostile contents (the generator:
tests/fuzz/family_userfiles.py): the user's settings file is left byte for byte or edited
keeping every other line, key and comment; the user's own files in the cache folder are
never touched.

Bounded example counts keep this to seconds; `python benchmarks/fuzz.py --families
userfiles` runs the same generator for as long as you like.
"""

from __future__ import annotations

from random import Random

import family_userfiles as fam
import generators as gen
import properties
from hypothesis import given
from hypothesis import strategies as st

SETTINGS = properties.bounded(60)


def _run(case: fam.Case) -> gen.Outcome:
    return properties.run_case(fam.run_case, case, 20.0)


@SETTINGS
@given(rng=st.randoms(use_true_random=False))
def test_a_settings_file_is_left_as_it_was_or_edited_losing_nothing(rng: Random) -> None:
    raw = fam.settings_text(rng).encode("utf-8")
    if rng.random() < 0.3:
        raw = fam._break(rng, raw)
    case = fam.Case("settings", raw, rng.choice(fam.SETUPS), fam._changes(rng))
    outcome = _run(case)
    assert outcome.kind in ("ok", "rejected"), (outcome, case_summary(case))


@properties.bounded(25)
@given(rng=st.randoms(use_true_random=False))
def test_the_users_files_in_the_cache_folder_are_never_touched(rng: Random) -> None:
    case = fam.Case("cache", cache_files=fam._cache_files(rng), writes=rng.randint(1, 12))
    outcome = _run(case)
    assert outcome.kind in ("ok", "rejected"), (outcome, case_summary(case))


def test_the_generator_reaches_writes_refusals_and_both_kinds() -> None:
    seen = set()
    for i in range(80):
        case = fam.make_case(Random(f"userfiles:0:{i}"))
        seen.add((case.kind, _run(case).kind))
    assert {("settings", "ok"), ("settings", "rejected"), ("cache", "ok")} <= seen


def case_summary(case: fam.Case) -> str:
    return fam.case_text(case)[:400].decode("utf-8", "replace")
