"""A transformer step beside its matmuls: elementwise traffic, LoRA's adapters and tensor
parallelism's all-reduces (fit.transformer.step_extras, fit.core.interconnect)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from gputui.catalog import load_catalog
from gputui.catalog.catalog import Catalog
from gputui.fit.core import interconnect as ic
from gputui.fit.importers.hfkeys import from_hf_dict
from gputui.fit.transformer.model import TransformerModel, from_config
from gputui.fit.transformer.step_extras import layer_elementwise_elements, step_extras
from gputui.fit.transformer.step_ops import NO_EXTRAS, generate_timing
from gputui.fit.transformer.workload import Workload
from gputui.fit.transformer.workload_speed import workload_speed
from tests.conftest import run_fit

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def cat() -> Catalog:
    return load_catalog()


def load(name: str) -> TransformerModel:
    path = ROOT / "examples" / "llm" / f"{name}.json"
    return from_config(from_hf_dict(json.loads(path.read_text())), name, str(path))


def test_all_reduce_time_is_nccls_ring_model() -> None:
    nvl = ic.Link("nvlink", 450e9, "")
    pcie = ic.Link("pcie", 31.5e9, "")
    # a tiny message: NCCL's LL latency, 3.6 us plus 2(n - 1) hops
    assert ic.all_reduce_s(64, 8, nvl) == pytest.approx(3.6e-6 + 14 * 0.47e-6, rel=1e-3)
    assert ic.all_reduce_s(64, 8, pcie) == pytest.approx(3.6e-6 + 14 * 1.0e-6, rel=1e-3)
    # a large one: Simple, at the bus bandwidth times n / 2(n - 1)
    big = 256e6
    assert ic.all_reduce_s(big, 8, nvl) == pytest.approx(
        8.4e-6 + 14 * 3.4e-6 + big / (450e9 * 8 / 14)
    )
    assert ic.all_reduce_s(big, 1, nvl) == 0.0


def test_the_link_comes_from_the_catalog(cat: Catalog) -> None:
    def link(name: str, gpus: int) -> ic.Link | None:
        return ic.link(cat.find(name), gpus)

    h200 = link("H200 SXM", 8)
    assert h200 is not None and (h200.kind, h200.bytes_per_s) == ("nvlink", 450e9)
    b200 = link("B200", 8)
    assert b200 is not None and b200.bytes_per_s == 900e9  # "1.8 TB/s", both directions
    two = link("GeForce RTX 3090", 2)
    assert two is not None and (two.kind, two.bytes_per_s) == ("nvlink", 56.25e9)
    four = link("GeForce RTX 3090", 4)  # a 2-way bridge joins two: PCIe 4.0 beyond
    assert four is not None and (four.kind, four.bytes_per_s) == ("pcie", 31.5e9)
    nvl4 = link("H200 NVL", 4)  # "bridge (2- or 4-way)"
    assert nvl4 is not None and nvl4.kind == "nvlink"
    a100 = link("A100 PCIe 80 GB", 4)
    assert a100 is not None and a100.kind == "pcie"
    ada = link("GeForce RTX 4090", 2)
    assert ada is not None and (ada.kind, ada.bytes_per_s) == ("pcie", 31.5e9)


def test_tensor_parallel_decode_pays_two_all_reduces_per_layer(cat: Catalog) -> None:
    model = load("llama-3-70b")
    card = cat.find("H200 SXM")
    arch = cat.architectures[card.architecture]
    wl = Workload(mode="generate", seq_len=1024, gpus=8, tp=8, parallel="tp")
    extras = step_extras(model, wl, card, 2, 8)
    assert extras.all_reduces == 2 * model.config.num_layers and extras.link is not None
    shape = dict(
        params=model.params // 8,
        weight_bytes=model.params * 2 // 8,
        n_layers=model.config.num_layers,
        kv_bytes_per_token=4096,
        attention_flops_per_token_pair=0,
    )
    with_comm = generate_timing(card, arch, **shape, extras=extras)  # type: ignore[arg-type]
    without = generate_timing(
        card,
        arch,
        **shape,  # type: ignore[arg-type]
        extras=replace(extras, all_reduces=0),
    )
    assert with_comm is not None and without is not None
    comm = extras.all_reduces * ic.all_reduce_s(model.config.hidden_size * 2, 8, extras.link)
    step = with_comm.phases["decode"].step_time_s - without.phases["decode"].step_time_s
    assert step == pytest.approx(comm)
    # the speed says what it assumed of the link
    s = workload_speed(model, wl, card, 1, arch)
    assert "TP 8 all-reduces over NVLink 450 GB/s per direction" in s.basis


def test_lora_adapters_are_small_kernels_that_move_the_activations() -> None:
    model = load("llama-3-8b")
    cfg = model.config
    wl = Workload(mode="train", method="lora", seq_len=2048)
    assert wl.lora_targets == ("q", "k", "v", "o")
    extras = step_extras(model, wl, load_catalog().find("RTX 4090"), 2, 1)
    h, kv = cfg.hidden_size, cfg.kv_dim
    shapes = [(h, h), (h, kv), (h, kv), (h, h)]  # (in, out) of q, k, v, o
    assert extras.adapter_kernels == cfg.num_layers * 4 * (4 + 6)
    per_layer = sum(i + 6 * o + 4 * o + 5 * i for i, o in shapes)
    assert extras.adapter_bytes_per_token == cfg.num_layers * per_layer * 2
    checkpointed = step_extras(
        model, replace(wl, grad_checkpointing=True), load_catalog().find("RTX 4090"), 2, 1
    )
    assert checkpointed.adapter_kernels == cfg.num_layers * 4 * (8 + 6)


def test_a_layers_elementwise_traffic_is_counted_from_the_config() -> None:
    cfg = load("llama-3-8b").config
    whole, split = layer_elementwise_elements(load("llama-3-8b"))
    h, q, kv, ffn = cfg.hidden_size, cfg.q_dim, cfg.kv_dim, cfg.intermediate_size
    assert whole == 2 * 2 * h + 2 * 3 * h  # two norms, two residual adds
    assert split == 2 * (q + kv) + (2 * q + 2 * kv) + 5 * ffn  # rotary, attention, SwiGLU


def test_training_counts_the_work_beside_the_matmuls(cat: Catalog) -> None:
    """LoRA on an RTX 4090: the elementwise kernels, the loss and the adapters slow the
    step below the matmuls' roofline alone."""
    model = load("llama-3-8b")
    card = cat.find("RTX 4090")
    arch = cat.architectures[card.architecture]
    wl = Workload(mode="train", method="lora", seq_len=2048)
    s = workload_speed(model, wl, card, 1, arch)
    assert s.train_tokens_per_s is not None
    extras = step_extras(model, wl, card, 2, 1)
    assert extras.elementwise_bytes_per_token > 0 and extras.adapter_bytes_per_token > 0
    assert NO_EXTRAS.adapter_kernels == 0
    # at least the extra bytes at the card's elementwise bandwidth, per token
    extra_s = (extras.elementwise_bytes_per_token + extras.adapter_bytes_per_token) / (
        card.memory_bandwidth_gbs * 1e9 * 0.8  # type: ignore[operator]
    )
    step = s.phases["train"].step_time_s / 2048
    assert step > extra_s


def test_the_cli_names_the_link(capsys: pytest.CaptureFixture[str]) -> None:
    path = str(ROOT / "examples" / "llm" / "llama-3-70b.json")
    code, out, _ = run_fit(capsys, path, "--gpu", "RTX 3090", "--gpus", "4", "--parallel", "tp")
    assert code in (0, 1)
    assert "TP 4 all-reduces over PCIe 4.0 x16 31.5 GB/s per direction" in out
