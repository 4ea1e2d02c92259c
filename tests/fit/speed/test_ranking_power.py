"""Small models rank by what limits them (split-K GEMMs), and every ranking ranks per watt."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gputui.catalog import load_catalog
from gputui.cli import main
from gputui.fit.core.power import tflops_per_watt
from gputui.fit.core.waves import gemm_waves, split_k_bytes, wave_efficiency
from gputui.tui.views.catalog_compare import COLUMNS

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = str(ROOT / "examples" / "models.toml")
GPT2 = str(ROOT / "examples" / "llm" / "gpt2.json")


def ranking(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, dict[str, object]]:
    assert main(["fit", *argv, "--all-cards", "--json"]) in (0, 1)
    out = json.loads(capsys.readouterr().out)
    cards = out["models"][0]["ranking"]  # the first model's, whatever its kind
    return {c["card"]: c for c in cards}


def test_split_k_fills_the_sms_of_a_one_tile_gemm() -> None:
    # mnist-cnn's dense layer: a 128 x 128 output (one tile) reducing over K = 9,216.
    # Without a split it runs on one SM of 128; cuBLAS splits K into 72 slices of 128
    assert gemm_waves(128, 128, 128, 0) == (1 / 128, 1)
    assert gemm_waves(128, 128, 128, 9216) == (72 / 128, 72)
    assert gemm_waves(128, 128, 56, 9216) == (1.0, 56)  # fewer SMs: one slice each
    assert gemm_waves(128, 128, 128, 200) == (1 / 128, 1)  # too shallow to split
    assert gemm_waves(1024, 512, 32, 4096) == (1.0, 1)  # enough tiles: no split
    assert split_k_bytes(128, 128, 72) == 2 * 71 * 128 * 128 * 4
    assert split_k_bytes(128, 128, 1) == 0
    # the re-exported wave model without a depth is the plain one
    assert wave_efficiency(1024, 512, 142) == pytest.approx(32 / 142)


def test_rtx_4090_ranks_above_a30_and_a10_for_mnist_cnn(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # the 4090 leads both on bandwidth, bf16 and fp32; only a one-SM dense GEMM put it below
    by = ranking(capsys, EXAMPLES, "--model", "mnist-cnn")
    fast = by["GeForce RTX 4090"]["throughput"]
    assert isinstance(fast, float)
    for other in ("A30", "A10"):
        slow = by[other]["throughput"]
        assert isinstance(slow, float) and fast > slow, other


def test_per_watt_and_energy_fields_follow_the_power_limit(
    capsys: pytest.CaptureFixture[str],
) -> None:
    by = ranking(capsys, EXAMPLES, "--model", "mnist-cnn")
    catalog = {c.name: c for c in load_catalog().cards}
    checked = 0
    for name, row in by.items():
        assert "throughput_per_1000_usd" in row  # existing fields kept
        tdp = catalog[name].tdp_w
        assert row["power_limit_w"] == tdp
        sps = row["throughput"]
        if tdp is None or sps is None:
            assert row["throughput_per_watt"] is None
            assert row["energy_at_power_limit"] is None
            continue
        assert isinstance(sps, float)
        assert row["throughput_per_watt"] == pytest.approx(sps / tdp)
        assert row["energy_at_power_limit"] == pytest.approx(1000 * tdp / sps)
        checked += 1
    assert checked > 20
    assert any(catalog[n].tdp_w is None for n in by)  # GH200: no per-GPU power figure


def test_text_ranks_per_watt_best_first(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["fit", EXAMPLES, "--model", "mnist-cnn", "--all-cards"]) in (0, 1)
    lines = capsys.readouterr().out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip().startswith("per watt"))
    rows = lines[start + 1 : start + 11]
    values = [float(r.split("samples/s per W")[0].split()[-1].replace(",", "")) for r in rows]
    assert len(values) == 10 and values == sorted(values, reverse=True)
    assert all("J per 1,000 samples" in r for r in rows)


def test_llm_ranking_gives_tokens_per_watt_and_wh_per_million(
    capsys: pytest.CaptureFixture[str],
) -> None:
    by = ranking(capsys, GPT2, "--mode", "inference")
    row = by["L4"]
    tps = row["throughput"]
    assert isinstance(tps, float) and row["power_limit_w"] == 72
    assert row["throughput_per_watt"] == pytest.approx(tps / 72)
    assert row["energy_at_power_limit"] == pytest.approx(1e6 * 72 / tps / 3600)


def test_catalog_screen_has_a_per_watt_column() -> None:
    assert ("bf16_per_w", "BF16 TF/W") in COLUMNS
    cards = {c.name: c for c in load_catalog().cards}
    h100 = cards["H100 SXM5 80GB"]
    assert h100.bf16_tensor_tflops is not None and h100.tdp_w is not None
    assert tflops_per_watt(h100) == round(h100.bf16_tensor_tflops / h100.tdp_w, 2)
    assert tflops_per_watt(cards["GH200 96 GB"]) is None  # no per-GPU power figure
