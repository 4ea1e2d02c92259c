"""What every fuzz family's bounded property test shares: the settings and how one case runs.

The families (tests/fuzz/family_*.py) are also run by benchmarks/fuzz.py for as long as
one likes; here each runs a bounded number of examples in a fresh temporary folder, with a
hang turned into a failure.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import generators as gen
from hypothesis import HealthCheck, settings

Case = TypeVar("Case")


def bounded(examples: int) -> Any:
    """Hypothesis settings for a family: `examples` cases, no per-example deadline."""
    return settings(
        max_examples=examples, deadline=None, suppress_health_check=[HealthCheck.too_slow]
    )


def run_case(
    run: Callable[[Case, Path], gen.Outcome], case: Case, seconds: float = 10.0
) -> gen.Outcome:
    """`run(case, folder)` in a fresh temporary folder, failing after `seconds`."""
    with tempfile.TemporaryDirectory() as tmp, gen.no_hang(seconds):
        return run(case, Path(tmp))
