"""Transformer tokens/s come from the one roofline (fit.transformer.step_ops, timed by
fit.core.roofline), as the CLI shows them."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from gputui.catalog import load_catalog
from gputui.cli import main
from gputui.fit.core.target import card_target
from gputui.fit.importers.hfkeys import from_hf_dict
from gputui.fit.transformer.estimate import estimate
from gputui.fit.transformer.model import TransformerModel, from_config
from gputui.fit.transformer.step_extras import step_extras
from gputui.fit.transformer.step_ops import generate_timing
from gputui.fit.transformer.workload import Workload
from gputui.fit.transformer.workload_speed import gemm_shapes

ROOT = Path(__file__).resolve().parents[3]
LLAMA3 = ROOT / "examples/llm/llama-3-8b.json"


def llama() -> TransformerModel:
    return from_config(from_hf_dict(json.loads(LLAMA3.read_text())), "llama-3-8b", str(LLAMA3))


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict:  # type: ignore[type-arg]
    rc = main(["fit", str(LLAMA3), *argv, "--json"])
    out, _ = capsys.readouterr()
    assert rc in (0, 1)
    return json.loads(out)["models"][0]  # type: ignore[no-any-return]


def test_cli_speed_is_the_roofline(capsys: pytest.CaptureFixture[str]) -> None:
    """The figure printed is fit.transformer.step_ops.generate_timing on the same weights, cache and card."""
    data = run_json(capsys, "--gpu", "RTX 4090", "--seq-len", "1024", "--new-tokens", "128")
    s = data["estimates"][0]["speed"]
    assert s["model"] == "roofline" and s["rough"] is True
    assert s["decode_bound"] == "memory" and s["prefill_bound"] == "compute"
    cat = load_catalog()
    card = cat.find("RTX 4090")
    m = llama()
    cfg = m.config
    ctx = 1024 + 64
    direct = generate_timing(
        card,
        cat.architectures[card.architecture],
        params=m.params - m.layout.token_embedding,
        weight_bytes=(m.params - m.layout.token_embedding) * 2,  # bf16, embeddings not read
        n_layers=cfg.num_layers,
        kv_bytes_per_token=2 * cfg.num_layers * cfg.kv_dim * 2,
        attention_flops_per_token_pair=4 * cfg.num_layers * cfg.q_dim,
        prompt_tokens=1024,
        context_tokens=ctx,
        compute_precision="bf16",
        gemm_shapes=gemm_shapes(m),
        extras=step_extras(m, Workload(mode="generate", seq_len=1024), card, 2, 1),
    )
    assert direct is not None
    assert s["decode_tokens_per_s"] == pytest.approx(direct.phases["decode"].throughput, rel=0.01)
    assert s["prefill_tokens_per_s"] == pytest.approx(direct.phases["prefill"].throughput, rel=0.01)
    assert "bf16 tensor" in s["basis"] and "1008 GB/s" in s["basis"]


def test_decode_ranks_by_bandwidth_prefill_by_tensor_peak(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The issue's complaint: a 300 GB/s L4 must not out-decode a 936 GB/s RTX 3090."""
    data = run_json(capsys, "--all-cards")
    rows = {r["card"]: r for r in data["ranking"]}
    l4, r3090, h100 = (rows[n] for n in ("L4", "GeForce RTX 3090", "H100 SXM5 80GB"))
    assert h100["throughput"] > r3090["throughput"] > 2 * l4["throughput"]
    assert r3090["bound"] == "memory"
    fits = [r for r in data["ranking"] if r["fits"] and r["cards_needed"] == 1]
    speeds = [r["throughput"] for r in fits if r["throughput"] is not None]
    assert speeds == sorted(speeds, reverse=True)


def test_decode_turns_compute_bound_at_the_batch_it_reports() -> None:
    cat = load_catalog()
    card = cat.find("H100 SXM5 80GB")
    target = card_target(card, dict(cat.architectures))
    wl = Workload(mode="generate", seq_len=16, new_tokens=2)
    s = estimate(llama(), wl, target).speed
    assert s is not None and s.decode_compute_bound_batch is not None
    turn = s.decode_compute_bound_batch
    at = estimate(llama(), replace(wl, batch_size=turn), target).speed
    below = estimate(llama(), replace(wl, batch_size=turn - 1), target).speed
    assert at is not None and below is not None
    assert at.bound("decode") == "compute" and below.bound("decode") != "compute"
    # a long context adds per-sequence KV reads faster than FLOPs: no batch turns it
    long = estimate(llama(), Workload(mode="generate", seq_len=8000, new_tokens=64), target).speed
    assert long is not None and long.decode_compute_bound_batch is None


def test_text_names_bounds_and_figures(capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["fit", str(LLAMA3), "--gpu", "T4"])
    out, _ = capsys.readouterr()
    assert rc in (0, 1)
    assert "decode ~" in out and "memory-bound at batch 1" in out
    # T4 has no bf16 tensor cores: the matmuls are timed in fp16, as engines run there
    assert "roofline in fp16: fp16 tensor" in out


def test_training_counts_its_passes(capsys: pytest.CaptureFixture[str]) -> None:
    lora = run_json(capsys, "--gpu", "H100 SXM5 80GB", "--mode", "train", "--lora-rank", "16")
    ckpt = run_json(
        capsys,
        "--gpu",
        "H100 SXM5 80GB",
        "--mode",
        "train",
        "--lora-rank",
        "16",
        "--grad-checkpointing",
    )
    a = lora["estimates"][0]["speed"]
    b = ckpt["estimates"][0]["speed"]
    assert a["train_bound"] == "compute"
    # recomputing the forward: the matmuls run 3 passes instead of 2 (LoRA skips the base
    # weight gradients), the elementwise kernels 4 instead of 3 (forward, twice its traffic
    # backward) and the loss once either way: between 4/3 and 3/2
    ratio = a["train_tokens_per_s"] / b["train_tokens_per_s"]
    assert 4 / 3 < ratio < 1.5


def test_gemm_shapes_are_the_dense_matrices_of_the_layout() -> None:
    m = llama()
    shapes = {(o, i): n for o, i, n in gemm_shapes(m)}
    # Llama 3 8B: q and o 4096 x 4096, k and v 1024 x 4096, gate/up 14336 x 4096, down
    # 4096 x 14336 in each of 32 layers, and the untied LM head
    assert shapes[(4096, 4096)] == 64 and shapes[(1024, 4096)] == 64
    assert shapes[(14336, 4096)] == 64 and shapes[(4096, 14336)] == 32
    assert shapes[(128256, 4096)] == 1
    weights = sum(o * i * n for (o, i), n in shapes.items())
    assert weights == m.params - m.layout.token_embedding - 32 * 2 * 4096 - 4096  # no norms
