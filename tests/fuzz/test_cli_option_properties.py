"""Every subcommand's options with hostile values: one line and exit 2, or a clean answer.

The bounded counterpart of `python benchmarks/fuzz.py --families cli_options`
(the same generator, tests/fuzz/family_cli_options.py).
"""

from __future__ import annotations

import os
from random import Random

import family_cli_options as family
import pytest
from hypothesis import given
from hypothesis import strategies as st
from properties import bounded, run_case

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")


@bounded(60)
@given(rng=st.randoms(use_true_random=False))
def test_hostile_option_values_are_refused_in_one_line(rng: Random) -> None:
    case = family.make_case(rng)
    outcome = run_case(family.run_case, case, seconds=30)
    assert outcome.kind in ("ok", "rejected"), (outcome, family.case_text(case))


@pytest.mark.parametrize(
    ("command", "options"),
    [
        ("", [("--interval", "number", "--")]),
        ("exporter", [("--interval", "number", "--")]),
        ("catalog match", [("--memory-mib", "number", "-" + "9" * 400)]),
        ("exporter", [("--listen", "string", "127.0.0.1:\u00b2")]),
        ("exporter", [("--basic-auth-file", "path", "fifo")]),
        ("", [("--models", "path", "not-utf8")]),
        ("fit", [("", "path", "long")]),
    ],
)
def test_cases_the_campaign_found(command: str, options: list[tuple[str, str, str]]) -> None:
    outcome = run_case(family.run_case, family.Case(command, options), seconds=30)
    assert outcome.kind == "rejected", outcome


def test_the_generator_plants_what_must_be_refused() -> None:
    """A generator that planted nothing to refuse would test nothing."""
    cases = [family.make_case(Random(f"cli_options:0:{i}")) for i in range(200)]
    assert sum(c.planted_refusal() is not None for c in cases) > 50
    assert {c.command for c in cases} == set(family.COMMANDS)
