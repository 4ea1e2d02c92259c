"""`gputui catalog` through the real entry point: output shape, JSON keys and exit codes."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from gputui.catalog import Catalog
from gputui.catalog.models import Card
from gputui.cli import main

from .conftest import GOOD_CARD

Capsys = pytest.CaptureFixture[str]
REQUIRED_KEYS = {
    "name",
    "nvml_names",
    "architecture",
    "compute_capability",
    "memory_gib",
    "memory_bandwidth_gbs",
    "cuda_cores",
    "tensor_cores",
    "fp32_tflops",
    "fp16_tensor_tflops",
    "bf16_tensor_tflops",
    "tf32_tensor_tflops",
    "int8_tensor_tops",
    "fp8_tensor_tflops",
    "tdp_w",
    "launch_year",
    "launch_price_usd",
    "source",
}


def _json(capsys: Capsys, argv: list[str], code: int = 0) -> object:
    assert main(argv) == code
    out = capsys.readouterr().out
    return json.loads(out)


def test_list_json_has_every_card_with_all_fields(catalog: Catalog, capsys: Capsys) -> None:
    data = _json(capsys, ["catalog", "--json"])
    assert isinstance(data, list)
    assert [d["name"] for d in data] == [c.name for c in catalog.cards]
    for entry in data:
        assert set(entry) >= REQUIRED_KEYS
        assert set(entry) == set(Card.model_fields)
        assert isinstance(entry["compute_capability"], str)
    t4 = next(d for d in data if d["name"] == "Tesla T4")
    assert t4["bf16_tensor_tflops"] is None  # Turing has no BF16: null, not 0


def test_list_action_is_the_default(capsys: Capsys) -> None:
    assert main(["catalog"]) == 0
    default = capsys.readouterr().out
    assert main(["catalog", "list"]) == 0
    assert capsys.readouterr().out == default
    assert "GeForce RTX 4090" in default and "H100 PCIe" in default


def test_list_arch_filter(capsys: Capsys) -> None:
    data = _json(capsys, ["catalog", "list", "--arch", "hopper", "--json"])
    assert isinstance(data, list) and data
    assert {d["architecture"] for d in data} == {"hopper"}


def test_sort_numbers_descending_unknown_last(capsys: Capsys) -> None:
    data = _json(capsys, ["catalog", "--sort", "launch_price_usd", "--json"])
    assert isinstance(data, list)
    prices = [d["launch_price_usd"] for d in data]
    known = [p for p in prices if p is not None]
    assert known == sorted(known, reverse=True)
    assert prices == known + [None] * (len(prices) - len(known))
    data = _json(capsys, ["catalog", "--sort", "memory_gib", "--json"])
    assert isinstance(data, list)
    assert data[0]["memory_gib"] == max(d["memory_gib"] for d in data)


def test_unknown_sort_field_is_one_line_exit_2(capsys: Capsys) -> None:
    assert main(["catalog", "--sort", "speed"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("gputui: cannot sort by 'speed'")
    assert "fp16_tensor_tflops" in err and err.count("\n") == 1


def test_unknown_arch_exit_2(capsys: Capsys) -> None:
    assert main(["catalog", "--arch", "kepler"]) == 2
    assert "unknown architecture 'kepler'" in capsys.readouterr().err


def test_show_by_nvml_name_prints_figures_and_notes(capsys: Capsys) -> None:
    assert main(["catalog", "show", "NVIDIA A100-SXM4-80GB"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("A100 SXM4 80 GB\n")
    assert "BF16 tensor TFLOPS" in out and "312" in out
    assert "Ampere" in out and "BF16 has FP32's range" in out


def test_show_unquoted_words_and_json(capsys: Capsys) -> None:
    data = _json(capsys, ["catalog", "show", "rtx", "4090", "--json"])
    assert isinstance(data, dict)
    assert data["card"]["name"] == "GeForce RTX 4090"
    assert data["architecture"]["key"] == "ada"
    assert "fp8" in data["architecture"]["tensor_precisions"]


def test_show_ambiguous_is_exit_2(capsys: Capsys) -> None:
    assert main(["catalog", "show", "A100"]) == 2
    err = capsys.readouterr().err
    assert "A100 PCIe 40 GB" in err and "A100 SXM4 80 GB" in err


def test_match_card_json_exit_0(capsys: Capsys) -> None:
    data = _json(
        capsys, ["catalog", "match", "NVIDIA A100-SXM4-40GB", "--memory-mib", "40960", "--json"]
    )
    assert isinstance(data, dict)
    assert set(data) == {"status", "card", "architecture", "candidates"}
    assert data["status"] == "card"
    assert data["card"]["name"] == "A100 SXM4 40 GB"
    assert set(data["card"]) >= REQUIRED_KEYS
    assert data["architecture"] == "Ampere"
    assert data["candidates"] == []


def test_match_architecture_only_exit_1(capsys: Capsys) -> None:
    data = _json(
        capsys, ["catalog", "match", "NVIDIA GeForce RTX 3050", "--cc", "8.6", "--json"], 1
    )
    assert data == {
        "status": "architecture",
        "card": None,
        "architecture": "Ampere",
        "candidates": [],
    }


def test_match_architecture_only_text_names_the_precisions(capsys: Capsys) -> None:
    assert main(["catalog", "match", "NVIDIA GeForce RTX 3050", "--cc", "7.5"]) == 1
    out = capsys.readouterr().out
    assert "card not in catalog; architecture Turing" in out
    assert "fp16" in out and "int8" in out and "bf16" not in out


def test_match_ambiguous_and_unknown_exit_1(capsys: Capsys) -> None:
    data = _json(capsys, ["catalog", "match", "Tesla V100-SXM2", "--json"], 1)
    assert isinstance(data, dict) and data["status"] == "ambiguous"
    assert sorted(data["candidates"]) == ["Tesla V100 SXM2 16 GB", "Tesla V100 SXM2 32 GB"]
    data = _json(capsys, ["catalog", "match", "Matrox G200", "--json"], 1)
    assert data == {"status": "unknown", "card": None, "architecture": None, "candidates": []}


def test_match_text(capsys: Capsys) -> None:
    assert main(["catalog", "match", "NVIDIA L40S"]) == 0
    assert capsys.readouterr().out.strip() == "card: L40S"


def test_compare_ratios_to_first(capsys: Capsys) -> None:
    data = _json(capsys, ["catalog", "compare", "A100 SXM4 80GB", "H100 SXM", "--json"])
    assert isinstance(data, dict)
    assert data["cards"] == ["A100 SXM4 80 GB", "H100 SXM5 80GB"]
    rows = {r["field"]: r for r in data["rows"]}
    assert rows["memory_gib"]["ratios"] == [1.0, 1.0]
    assert rows["bf16_tensor_tflops"]["ratios"][1] == pytest.approx(989.4 / 312)
    assert rows["fp8_tensor_tflops"]["ratios"] == [None, None]  # the A100 has no FP8
    assert main(["catalog", "compare", "RTX 4090", "RTX 3090"]) == 0
    out = capsys.readouterr().out
    assert "x0.93" in out  # 936 / 1008 GB/s
    assert "Launch price" in out


def test_compare_needs_two(capsys: Capsys) -> None:
    assert main(["catalog", "compare", "L4"]) == 2
    assert "at least two" in capsys.readouterr().err


def test_bad_catalog_file_is_one_line_exit_2(
    capsys: Capsys, scratch_catalog: Callable[[str], Path]
) -> None:
    root = scratch_catalog(GOOD_CARD.replace("memory_gib = 24", "memory_gib = [24]"))
    assert main(["catalog", "--catalog-dir", str(root)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "test.toml:7:" in err and 'card "Test Card": memory_gib' in err
