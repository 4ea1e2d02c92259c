"""`gputui fit` shows the roofline: bound per layer, share of time per bound, per card."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gputui.catalog import load_catalog
from tests.conftest import run_fit

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = str(ROOT / "examples" / "models.toml")


def test_layers_table_names_each_layers_bound(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_fit(capsys, EXAMPLES, "--gpu", "RTX 3090", "--model", "vgg16", "--layers")
    assert code == 0
    assert "bound (time)" in out
    rows = [line.split() for line in out.splitlines() if line.strip()[:2].strip().isdigit()]
    conv = [r for r in rows if len(r) > 2 and r[1] == "Conv2D"]
    pools = [r for r in rows if len(r) > 2 and r[1] == "MaxPooling2D"]
    assert conv and pools
    # the big 3x3 convolutions wait on the tensor cores, max-pooling on memory
    assert sum("compute" in r for r in conv) >= len(conv) - 1
    assert all("memory" in r or "launch" in r for r in pools)
    assert "rough roofline estimate: compute-bound" in out


def test_json_gives_shares_by_bound_per_estimate_and_card(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = run_fit(capsys, EXAMPLES, "--gpu", "RTX 3090", "--model", "vgg16", "--json")
    assert code == 0
    (vgg,) = json.loads(out)["models"]
    (on_3090,) = vgg["estimates"]
    est = next(e for e in on_3090["precisions"] if e["precision"] == "amp_bf16")["speed"]
    shares = est["time_share_by_bound"]
    assert set(shares) == {"compute", "memory", "launch"}
    assert sum(shares.values()) == pytest.approx(1.0)
    assert est["bound"] == max(shares, key=shares.__getitem__)
    assert {lb["bound"] for lb in est["layer_bounds"]} <= {"compute", "memory", "launch"}
    assert sum(lb["seconds"] for lb in est["layer_bounds"]) < est["step_time_s"]  # + optimizer

    code, out, _ = run_fit(capsys, EXAMPLES, "--all-cards", "--model", "vgg16", "--json")
    (vgg,) = json.loads(out)["models"]
    known = [c for c in vgg["ranking"] if c["throughput"] is not None]
    figures = {
        c.name: c.memory_bandwidth_gbs is not None and c.fp32_tflops is not None
        for c in load_catalog().cards
    }
    assert known
    for c in known:  # without a bandwidth or FP32 figure: FLOPs only, no bound
        assert (c["bound"] in ("compute", "memory", "launch")) == figures[c["card"]]
    by_name = {c["card"]: c for c in vgg["ranking"]}
    assert by_name["GeForce RTX 3090"]["throughput"] > by_name["L4"]["throughput"]
    assert by_name["L4"]["bound"] == "memory"
