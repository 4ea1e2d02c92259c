"""Hostile requests against a running exporter: never a 500, a traceback or a log flood.

The bounded counterpart of `python benchmarks/fuzz.py --families exporter_requests`
(the same generator, tests/fuzz/family_exporter_requests.py).
"""

from __future__ import annotations

import shutil
from random import Random

import family_exporter_requests as family
import pytest
from hypothesis import given
from hypothesis import strategies as st
from properties import bounded, run_case

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command"),
]


@bounded(60)
@given(rng=st.randoms(use_true_random=False))
def test_hostile_requests_get_an_answer_and_at_most_one_line(rng: Random) -> None:
    case = family.make_case(rng)
    outcome = run_case(family.run_case, case, seconds=30)
    assert outcome.kind in ("ok", "rejected"), (outcome, family.case_text(case))


@pytest.mark.parametrize("server", ["plain", "auth"])
@pytest.mark.parametrize("accept", family.ACCEPTS[:2])
def test_an_unnegotiable_accept_is_answered_in_text(server: str, accept: bytes) -> None:
    auth = [(b"Authorization", family.GOOD_AUTH)] if server == "auth" else []
    case = family.Case(
        server, b"GET", b"/metrics", b"HTTP/1.1", [(b"Host", b"x"), (b"Accept", accept), *auth]
    )
    assert run_case(family.run_case, case, seconds=30).kind == "ok"


def test_the_generator_reaches_the_application() -> None:
    """Most cases must parse as HTTP, or the campaign only tests the request-line parser."""
    cases = [family.make_case(Random(f"exporter_requests:0:{i}")) for i in range(200)]
    scrapes = [c for c in cases if c.method == b"GET" and c.version == b"HTTP/1.1"]
    assert len(scrapes) > 80
    assert sum(any(k == b"Accept" for k, _ in c.headers) for c in scrapes) > 40
