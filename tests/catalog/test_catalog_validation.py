"""Range and finiteness checks on catalog figures (mutated catalogs were accepted).

A card with `memory_gib = -1`, `sm_count = -1`, `tdp_w = -1e308` or a NaN/infinite figure
used to load, and `gputui catalog --json` then printed `NaN`/`Infinity` (invalid JSON).
Each such file must now fail at load time in one line naming the file, line and field.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from gputui.catalog.models import Card
from gputui.cli import main

from .conftest import GOOD_CARD

Capsys = pytest.CaptureFixture[str]
MakeCatalog = Callable[..., Path]

BAD_VALUES = [
    ("memory_gib", "-1"),
    ("memory_gib", "0"),
    ("memory_gib", "nan"),
    ("memory_gib", "inf"),
    ("sm_count", "-1"),
    ("sm_count", "0"),
    ("cuda_cores", "-5"),
    ("tdp_w", "-1e308"),
    ("tdp_w", "1e308"),
    ("fp32_tflops", "nan"),
    ("fp16_tensor_tflops", "-inf"),
    ("fp16_tensor_tflops", "0"),
    ("memory_bandwidth_gbs", "+inf"),
    ("boost_clock_mhz", "1"),
    ("launch_price_usd", "-699"),
    ("launch_year", "20"),
    ("memory_data_rate_gbps", "nan"),
]


def _with(field: str, value: str) -> str:
    if field == "memory_gib":
        return GOOD_CARD.replace("memory_gib = 24", f"memory_gib = {value}")
    return GOOD_CARD + f"{field} = {value}\n"


@pytest.mark.parametrize(("field", "value"), BAD_VALUES)
def test_out_of_range_or_non_finite_figure_is_refused(
    capsys: Capsys, scratch_catalog: MakeCatalog, field: str, value: str
) -> None:
    text = _with(field, value)
    line = next(n for n, t in enumerate(text.splitlines(), 1) if t.startswith(f"{field} ="))
    root = scratch_catalog(text)
    assert main(["catalog", "--catalog-dir", str(root), "--json"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""  # no half-printed JSON
    err = captured.err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert f"test.toml:{line}:" in err and f'card "Test Card": {field}:' in err


def test_derived_needs_its_rule_and_a_value(capsys: Capsys, scratch_catalog: MakeCatalog) -> None:
    root = scratch_catalog(GOOD_CARD + 'derived = ["bf16_tensor_tflops"]\n')
    assert main(["catalog", "--catalog-dir", str(root)]) == 2
    err = capsys.readouterr().err
    assert 'card "Test Card": derived_rule:' in err and "Traceback" not in err
    root = scratch_catalog(
        GOOD_CARD + 'derived = ["bf16_tensor_tflops"]\nderived_rule = "BF16 = FP16"\n'
    )
    assert main(["catalog", "--catalog-dir", str(root)]) == 2
    assert "bf16_tensor_tflops is listed as derived but has no value" in capsys.readouterr().err
    root = scratch_catalog(GOOD_CARD + 'derived = ["name"]\nderived_rule = "x"\n')
    assert main(["catalog", "--catalog-dir", str(root)]) == 2
    assert 'card "Test Card": derived:' in capsys.readouterr().err


def _strict_json(text: str) -> Any:
    def refuse(constant: str) -> None:
        raise AssertionError(f"non-finite number {constant} in JSON output")

    return json.loads(text, parse_constant=refuse)


def test_shipped_json_outputs_are_strict_json(capsys: Capsys) -> None:
    for argv in (
        ["catalog", "--json"],
        ["catalog", "show", "RTX 4090", "--json"],
        ["catalog", "compare", "RTX 4090", "A100 SXM4 80GB", "TITAN V", "--json"],
        ["catalog", "match", "NVIDIA L40S", "--json"],
    ):
        assert main(argv) == 0
        _strict_json(capsys.readouterr().out)


_BASE: dict[str, Any] = {
    "name": "Test Card",
    "nvml_names": ["NVIDIA Test Card"],
    "architecture": "ampere",
    "compute_capability": "8.6",
    "segment": "consumer",
    "memory_gib": 24,
    "source": "made up for a test",
}
_NUMERIC = [
    "memory_gib",
    "sm_count",
    "tdp_w",
    "fp32_tflops",
    "fp16_tensor_tflops",
    "memory_bandwidth_gbs",
    "launch_price_usd",
]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    field=st.sampled_from(_NUMERIC),
    value=st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers()),
)
def test_any_accepted_card_dumps_to_finite_positive_json(field: str, value: float) -> None:
    """Whatever number a mutation puts in a figure, either it is refused or the JSON is valid."""
    if field in {"sm_count"} and isinstance(value, float):
        value = value if not math.isfinite(value) or not value.is_integer() else int(value)
    try:
        card = Card.model_validate({**_BASE, field: value})
    except ValidationError:
        return
    dumped = card.model_dump(mode="json")
    text = json.dumps(dumped, allow_nan=False)  # raises on NaN/inf
    assert _strict_json(text)[field] > 0


@pytest.mark.parametrize(
    ("extra", "reason"),
    [
        ("notes = " + "[" * 500 + "]" * 500 + "\n", "nested too deeply"),
        ("sm_count = " + "9" * 5000 + "\n", "too long"),
    ],
)
def test_hostile_toml_in_a_card_file_is_one_line(
    capsys: Capsys, scratch_catalog: MakeCatalog, extra: str, reason: str
) -> None:
    # Found by benchmarks/fuzz.py: RecursionError and the int-conversion ValueError
    # escaped tomllib as tracebacks.
    root = scratch_catalog(GOOD_CARD + extra)
    assert main(["catalog", "--catalog-dir", str(root)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "test.toml:" in err and reason in err


def test_control_characters_in_an_error_line_are_shown_not_sent(
    capsys: Capsys, scratch_catalog: MakeCatalog
) -> None:
    # A card name echoed in a validation error must not retitle the terminal.
    text = GOOD_CARD.replace('name = "Test Card"', 'name = "\\u001b]0;pwn\\u0007"')
    text = text.replace("memory_gib = 24", "memory_gib = -1")
    assert text != GOOD_CARD
    root = scratch_catalog(text)
    assert main(["catalog", "--catalog-dir", str(root)]) == 2
    err = capsys.readouterr().err
    assert "\x1b" not in err and "\x07" not in err
    assert "^[]0;pwn^G" in err
