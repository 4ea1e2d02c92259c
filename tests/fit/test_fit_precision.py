"""Which precisions each architecture offers and recommends (fixed Architecture objects)."""

from __future__ import annotations

import pytest

from gputui.catalog.models import Architecture
from gputui.fit.core.precision import offered, policy, precision_options, recommend
from gputui.fit.core.precision_names import PRECISIONS


def arch(key: str, precisions: list[str]) -> Architecture:
    return Architecture.model_validate(
        {
            "name": key.capitalize(),
            "key": key,
            "compute_capabilities": ["0.0"],
            "year": 2020,
            "tensor_core_generation": 1 if precisions else None,
            "tensor_precisions": precisions,
            "notes": "test",
        }
    )


PASCAL = arch("pascal", [])
VOLTA = arch("volta", ["fp16"])
TURING = arch("turing", ["fp16", "int8", "int4"])
AMPERE = arch("ampere", ["fp16", "bf16", "tf32", "int8", "int4"])
ADA = arch("ada", ["fp16", "bf16", "tf32", "int8", "int4", "fp8"])
HOPPER = arch("hopper", ["fp16", "bf16", "tf32", "int8", "fp8"])


@pytest.mark.parametrize(
    ("a", "train", "infer"),
    [
        (PASCAL, ("fp32",), ("fp32",)),
        (VOLTA, ("fp32", "amp_fp16", "fp16"), ("fp32", "amp_fp16", "fp16")),
        (TURING, ("fp32", "amp_fp16", "fp16"), ("fp32", "amp_fp16", "fp16", "int8")),
        (
            AMPERE,
            ("fp32", "tf32", "amp_fp16", "amp_bf16", "bf16", "fp16"),
            ("fp32", "tf32", "amp_fp16", "amp_bf16", "bf16", "fp16", "int8"),
        ),
        (
            HOPPER,
            ("fp32", "tf32", "amp_fp16", "amp_bf16", "amp_fp8", "bf16", "fp16"),
            ("fp32", "tf32", "amp_fp16", "amp_bf16", "bf16", "fp16", "int8", "fp8"),
        ),
        (
            ADA,
            ("fp32", "tf32", "amp_fp16", "amp_bf16", "amp_fp8", "bf16", "fp16"),
            ("fp32", "tf32", "amp_fp16", "amp_bf16", "bf16", "fp16", "int8", "fp8"),
        ),
    ],
)
def test_offered_precisions_follow_tensor_core_support(
    a: Architecture, train: tuple[str, ...], infer: tuple[str, ...]
) -> None:
    assert offered(a, "train") == train
    assert offered(a, "inference") == infer


@pytest.mark.parametrize(
    ("a", "train", "infer"),
    [
        (PASCAL, "fp32", "fp32"),
        (VOLTA, "amp_fp16", "fp16"),
        (TURING, "amp_fp16", "fp16"),
        (AMPERE, "amp_bf16", "bf16"),
        (ADA, "amp_bf16", "bf16"),
        (HOPPER, "amp_bf16", "bf16"),
        (None, "fp32", "fp32"),
    ],
)
def test_recommendation_and_reason(a: Architecture | None, train: str, infer: str) -> None:
    name, reason = recommend(a, "train")
    assert name == train
    assert reason and "\n" not in reason
    assert recommend(a, "inference")[0] == infer


def test_fp8_reason_mentions_calibration_on_hopper() -> None:
    assert "fp8" in recommend(HOPPER, "inference")[1]
    assert "fp8" not in recommend(AMPERE, "inference")[1]


def test_inference_only_precisions_are_never_offered_for_training() -> None:
    for a in (PASCAL, VOLTA, TURING, AMPERE, ADA, HOPPER):
        by_name = {o.name: o for o in precision_options(a, "train")}
        assert not by_name["int8"].offered and "inference only" in by_name["int8"].reason
        assert not by_name["fp8"].offered


def test_every_precision_has_a_policy_with_sane_bytes() -> None:
    for name in PRECISIONS:
        p = policy(name)
        assert p.act_bytes <= p.weight_bytes
    # AMP keeps fp32 master weights, gradients and state, 16-bit activations and weight copies
    amp = policy("amp_bf16")
    assert (
        amp.weight_bytes,
        amp.grad_bytes,
        amp.state_bytes,
        amp.low_copy_bytes,
        amp.act_bytes,
    ) == (
        4,
        4,
        4,
        2,
        2,
    )
    assert policy("bf16").weight_bytes == 2 and policy("int8").weight_bytes == 1
    with pytest.raises(ValueError):
        policy("fp64")


def test_cli_precision_choices_match_library() -> None:
    from gputui.commands.fit.args import PRECISION_CHOICES

    assert PRECISION_CHOICES == PRECISIONS
