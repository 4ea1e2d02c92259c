"""The roofline: which ceiling limits each op, and what that does to card rankings."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from gputui.catalog import load_catalog
from gputui.catalog.catalog import Catalog
from gputui.catalog.models import Card
from gputui.fit.core import roofline as R
from gputui.fit.core import waves
from gputui.fit.core.precision import policy
from gputui.fit.graph import step_ops as graph_speed
from gputui.fit.importers.modelsfile import ModelSpec, load_models, parse_models
from gputui.fit.transformer import step_ops as transformer_speed

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "models.toml"


@pytest.fixture(scope="module")
def cat() -> Catalog:
    return load_catalog()


def card(cat: Catalog, name: str) -> Card:
    return next(c for c in cat.cards if c.name == name)


def model(layers: str, shape: str, optimizer: str = "sgd", mode: str = "train") -> ModelSpec:
    text = (
        f'[[model]]\nname = "t"\ninput_shape = {shape}\noptimizer = "{optimizer}"\n'
        f'mode = "{mode}"\nlayers = [ {layers} ]\n'
    )
    return parse_models(text)[0]


def prof(cat: Catalog, name: str, m: ModelSpec, precision: str, batch: int) -> R.Profile:
    c = card(cat, name)
    found = graph_speed.profile(m, c, cat.architectures.get(c.architecture), precision, batch)
    assert found is not None
    return found


CEIL = R.Ceilings(tensor_flops=100e12, cuda_core_flops=10e12, bandwidth=1e12, basis="test")


def test_op_time_takes_the_larger_ceiling_plus_launches() -> None:
    big = R.Op("gemm", "matmul", "forward", 7e12, 1e9, kernels=2, tensor_cores=True)
    t = R.op_time(big, CEIL)
    assert t.compute_s == pytest.approx(7e12 / (100e12 * R.EFFICIENCY["matmul"]))
    assert t.memory_s == pytest.approx(1e9 / (1e12 * R.EFFICIENCY["matmul"]))
    assert t.seconds == pytest.approx(t.compute_s + 2 * R.LAUNCH_S)
    assert t.bound == "compute"
    stream = R.Op("relu", "elementwise", "forward", 1e6, 8e9)
    assert R.op_time(stream, CEIL).bound == "memory"
    tiny = R.Op("bias", "elementwise", "forward", 10, 100)
    assert R.op_time(tiny, CEIL).bound == "launch"


def test_only_tensor_eligible_matmuls_get_the_tensor_rate() -> None:
    on = R.Op("a", "matmul", "forward", 1e12, 0, tensor_cores=True)
    off = replace(on, tensor_cores=False)
    elementwise = R.Op("b", "elementwise", "forward", 1e12, 0, tensor_cores=True)
    t_on, t_off = R.op_time(on, CEIL).compute_s, R.op_time(off, CEIL).compute_s
    assert t_off == pytest.approx(10 * t_on)  # CUDA-core rate is a tenth here
    # elementwise work never runs at tensor-core rates, whatever the flag says
    assert R.op_time(elementwise, CEIL).compute_s == pytest.approx(
        1e12 / (10e12 * R.EFFICIENCY["elementwise"])
    )


def test_channel_alignment_decides_tensor_cores_for_16_bit() -> None:
    aligned = model('{ type = "Dense", units = 64 }', "[64]")
    odd = model('{ type = "Dense", units = 60 }', "[60]")
    for m, expected in ((aligned, True), (odd, False)):
        ops = graph_speed.model_ops(m, "amp_fp16", 8)
        gemms = [o for o in ops if o.op_class == "matmul"]
        assert gemms and all(o.tensor_cores is expected for o in gemms)
    # TF32 takes fp32 operands: no multiple-of-8 rule
    assert all(
        o.tensor_cores for o in graph_speed.model_ops(odd, "tf32", 8) if o.op_class == "matmul"
    )


def test_ceilings_follow_what_the_architecture_accelerates(cat: Catalog) -> None:
    v100 = card(cat, "Tesla V100 SXM2 16 GB")
    volta = cat.architectures[v100.architecture]
    fp16 = R.ceilings(v100, volta, "amp_fp16")
    bf16 = R.ceilings(v100, volta, "amp_bf16")  # Volta has no bf16 tensor cores
    assert fp16 is not None and bf16 is not None
    assert fp16.tensor_flops == pytest.approx(v100.fp16_tensor_tflops * 1e12)
    assert bf16.tensor_flops is None
    assert fp16.bandwidth == pytest.approx(v100.memory_bandwidth_gbs * 1e9)
    # GeForce: the fp32-accumulate tensor figure (half the fp16-accumulate one) is used
    g = card(cat, "GeForce RTX 3090")
    c = R.ceilings(g, cat.architectures[g.architecture], "amp_fp16")
    assert c is not None and g.fp16_acc16_tensor_tflops is not None
    assert c.tensor_flops == pytest.approx(g.fp16_tensor_tflops * 1e12)
    acc16 = R.ceilings(g, cat.architectures[g.architecture], "fp16", accumulate16=True)
    assert acc16 is not None and acc16.tensor_flops == pytest.approx(
        g.fp16_acc16_tensor_tflops * 1e12
    )


def test_unknown_bandwidth_gives_no_estimate(cat: Catalog) -> None:
    c = card(cat, "GeForce RTX 3090").model_copy(update={"memory_bandwidth_gbs": None})
    m = model('{ type = "Dense", units = 64 }', "[64]")
    assert graph_speed.profile(m, c, cat.architectures[c.architecture], "fp32", 8) is None


def test_vgg16_ranks_by_bandwidth_and_tensor_rate_not_tensor_rate_alone(cat: Catalog) -> None:
    # FLOPs at 40 % of the datasheet put the L4 (300 GB/s, 121 fp16 TFLOPS)
    # 1.7x ahead of the RTX 3090 (936 GB/s, 71 TFLOPS with fp32 accumulate). With the
    # bytes counted, the L4 spends most of the step waiting on memory and falls behind.
    vgg = next(m for m in load_models(EXAMPLES) if m.name == "vgg16")
    names = ("GeForce RTX 3090", "L4", "Tesla T4")
    p = {n: prof(cat, n, vgg, "amp_fp16", 32) for n in names}
    assert p["GeForce RTX 3090"].samples_per_s > p["L4"].samples_per_s
    assert p["GeForce RTX 3090"].samples_per_s > 1.3 * p["Tesla T4"].samples_per_s
    assert p["L4"].bound == "memory"
    assert p["GeForce RTX 3090"].bound == "compute"


def test_normalisations_are_memory_bound_and_follow_bandwidth(cat: Catalog) -> None:
    bn = model(
        '{ type = "Conv2D", filters = 64, kernel_size = 3, padding = "same" }, '
        '{ type = "BatchNormalization" }, { type = "ReLU" }',
        "[56, 56, 64]",
    )
    p = prof(cat, "A100 SXM4 80 GB", bn, "amp_bf16", 64)
    by_layer = {lt.label.split(" ")[0]: lt.bound for lt in p.layers}
    assert by_layer["BatchNormalization"] == "memory"
    assert by_layer["ReLU"] == "memory"
    a100 = card(cat, "A100 SXM4 80 GB")
    faster = a100.model_copy(update={"memory_bandwidth_gbs": 2 * a100.memory_bandwidth_gbs})
    arch = cat.architectures[a100.architecture]
    q = graph_speed.profile(bn, faster, arch, "amp_bf16", 64)
    assert q is not None
    norm = [t for t in q.op_times() if "BatchNormalization" in t.op.name]
    base = [t for t in p.op_times() if "BatchNormalization" in t.op.name]
    assert sum(t.seconds for t in norm) < 0.6 * sum(t.seconds for t in base)


def test_small_batches_of_small_models_are_launch_bound(cat: Catalog) -> None:
    m = model(
        '{ type = "Dense", units = 32, activation = "relu" }, { type = "Dense", units = 10 }',
        "[32]",
    )
    p = prof(cat, "GeForce RTX 4090", m, "fp32", 1)
    assert p.bound == "launch"
    assert p.shares["launch"] > 0.9
    assert sum(p.shares.values()) == pytest.approx(1.0)


def test_optimizer_traffic_grows_with_its_state(cat: Catalog) -> None:
    def opt_bytes(optimizer: str) -> float:
        m = model('{ type = "Dense", units = 256 }', "[256]", optimizer=optimizer)
        return sum(o.bytes for o in graph_speed.model_ops(m, "fp32", 4) if o.pass_ == "optimizer")

    assert opt_bytes("sgd") < opt_bytes("momentum") < opt_bytes("adam") < opt_bytes("adamw")
    # sgd: read w and g, write w, 4 bytes each, per parameter
    assert opt_bytes("sgd") == 3 * 4 * (256 * 256 + 256)


def test_inference_runs_forward_only_and_training_all_passes() -> None:
    layers = '{ type = "Dense", units = 64 }, { type = "Dense", units = 64 }'
    infer = graph_speed.model_ops(model(layers, "[64]", mode="inference"), "bf16", 8)
    train = graph_speed.model_ops(model(layers, "[64]"), "bf16", 8)
    assert {o.pass_ for o in infer} == {"forward"}
    assert {o.pass_ for o in train} == {"forward", "backward_input", "backward_weight", "optimizer"}
    # the first layer needs no input gradient (its input is the data)
    first_back = [o for o in train if o.layer == 0 and o.pass_ == "backward_input"]
    assert first_back == []


def test_gan_step_runs_both_networks() -> None:
    gan = next(m for m in load_models(EXAMPLES) if m.kind == "gan")
    assert gan.discriminator is not None
    ops = graph_speed.model_ops(gan, "fp32", 16)
    assert {o.network for o in ops} == {"generator", "discriminator"}
    # D's weights get gradients in its two passes (real, fake), not when G trains through it
    d_layers = sum(1 for n in gan.discriminator.nodes if n.trains)
    d_weight_grads = [
        o for o in ops if o.network == "discriminator" and o.pass_ == "backward_weight"
    ]
    assert len(d_weight_grads) == 2 * d_layers
    # ...but G's step runs D's input backward a third time
    d_input_grads = {
        o.layer for o in ops if o.network == "discriminator" and o.pass_ == "backward_input"
    }
    assert d_input_grads
    assert policy("fp32").training


LLAMA8B = dict(
    params=8_030_261_248,
    weight_bytes=int(4.58 * 2**30),
    n_layers=32,
    kv_bytes_per_token=2 * 32 * 8 * 128 * 2,
    attention_flops_per_token_pair=4 * 32 * 32 * 128,
)


def test_llm_decode_is_bandwidth_bound_then_turns_compute_bound(cat: Catalog) -> None:
    c = card(cat, "GeForce RTX 4090")
    arch = cat.architectures[c.architecture]
    one = transformer_speed.generate_timing(c, arch, **LLAMA8B, context_tokens=256)  # type: ignore[arg-type]
    assert one is not None
    assert one.phases["decode"].bound == "memory"
    assert one.phases["prefill"].bound == "compute"
    assert one.phases["prefill"].throughput > 20 * one.phases["decode"].throughput
    turn = one.decode_compute_bound_batch
    assert turn is not None and turn > 1
    at = transformer_speed.generate_timing(c, arch, **LLAMA8B, context_tokens=256, batch=turn)  # type: ignore[arg-type]
    below = transformer_speed.generate_timing(
        c, arch, **LLAMA8B, context_tokens=256, batch=turn - 1
    )  # type: ignore[arg-type]
    assert at is not None and below is not None
    assert at.phases["decode"].bound == "compute" and below.phases["decode"].bound != "compute"
    # batching shares the weight read: aggregate tokens/s grows, per sequence it falls
    assert at.phases["decode"].throughput > 10 * one.phases["decode"].throughput
    assert at.phases["decode"].throughput / turn < one.phases["decode"].throughput


def test_llm_decode_follows_bandwidth_not_tensor_rate(cat: Catalog) -> None:
    # RTX 3090 (936 GB/s, 71 fp16 TFLOPS) against RTX 4070 Ti (504 GB/s, 160 fp16 TFLOPS)
    def decode(name: str) -> float:
        c = card(cat, name)
        s = transformer_speed.generate_timing(c, cat.architectures[c.architecture], **LLAMA8B)  # type: ignore[arg-type]
        assert s is not None
        return s.phases["decode"].throughput

    def prefill(name: str) -> float:
        c = card(cat, name)
        s = transformer_speed.generate_timing(c, cat.architectures[c.architecture], **LLAMA8B)  # type: ignore[arg-type]
        assert s is not None
        return s.phases["prefill"].throughput

    assert decode("GeForce RTX 3090") > 1.3 * decode("GeForce RTX 4070 Ti")
    assert prefill("GeForce RTX 4070 Ti") > prefill("GeForce RTX 3090")


def attention_model(dropout: float) -> ModelSpec:
    text = (
        '[[model]]\nname = "att"\nkind = "functional"\noptimizer = "adam"\n'
        'inputs = [ { name = "x", shape = [256, 64] } ]\n'
        "layers = [ "
        f'{{ name = "a", type = "MultiHeadAttention", num_heads = 4, key_dim = 16, '
        f'dropout = {dropout}, inputs = ["x", "x"] }}, '
        '{ name = "d", type = "Dense", units = 8, inputs = ["a"] } ]\n'
    )
    return parse_models(text)[0]


def test_eager_attention_moves_its_maps_through_memory_and_fused_does_not() -> None:
    eager = graph_speed.model_ops(attention_model(0.1), "amp_bf16", 8)
    fused = graph_speed.model_ops(attention_model(0.0), "amp_bf16", 8)  # Keras: no dropout -> SDPA
    names_e = {o.name.split(" (layers[0]) ")[-1] for o in eager if o.layer == 0}
    names_f = {o.name.split(" (layers[0]) ")[-1] for o in fused if o.layer == 0}
    assert {"softmax", "dropout", "scores (q k^T)", "probs @ v"} <= names_e
    assert "fused attention" in names_f and "softmax" not in names_f
    maps = 4 * 256 * 256 * 8  # heads x queries x keys x batch
    e_bytes = sum(o.bytes for o in eager if o.layer == 0)
    f_bytes = sum(o.bytes for o in fused if o.layer == 0)
    assert e_bytes - f_bytes > 10 * maps  # several bf16 passes over the maps, both ways
    # projections and the batched matmuls are tensor-core eligible (64 and 16 are aligned)
    assert all(o.tensor_cores for o in eager if o.layer == 0 and o.op_class == "matmul")


def test_step_totals_equal_the_sum_of_op_times(cat: Catalog) -> None:
    # time_ops sums inline for speed; the per-op view must give the same step and shares
    # (the step adds the time the GPU waits for the host to issue kernels, counted as launch)
    vgg = next(m for m in load_models(EXAMPLES) if m.name == "vgg16")
    p = prof(cat, "GeForce RTX 4090", vgg, "amp_bf16", 16)
    times = p.op_times()
    assert sum(t.seconds for t in times) + p.host_wait_s == pytest.approx(p.step_time_s)
    for b in R.BOUNDS:
        wait = p.host_wait_s if b == "launch" else 0.0
        assert sum(t.seconds for t in times if t.bound == b) + wait == pytest.approx(p.by_bound[b])
    # the cached op list is the one a fresh build gives
    assert graph_speed.model_ops(vgg, "amp_bf16", 16) == graph_speed._model_ops(
        vgg, "amp_bf16", 16, None
    )


def test_a_stream_of_tiny_kernels_waits_on_the_host(cat: Catalog) -> None:
    """Kernels shorter than the host's cost of issuing them: the step is the host's time,
    the same on a fast and a slow card; big kernels hide the host entirely."""
    c = R.ceilings(cat.find("H100 SXM5 80GB"), None, "fp32")
    slow = R.ceilings(cat.find("T4"), None, "fp32")
    assert c is not None and slow is not None
    tiny = [R.Op(f"k{i}", "elementwise", "forward", 10.0, 1e3) for i in range(100)]
    p, q = R.time_ops(tiny, c, 1), R.time_ops(tiny, slow, 1)
    assert p.step_time_s == pytest.approx(100 * R.HOST_S_PER_KERNEL + R.LAUNCH_S, rel=0.01)
    assert q.step_time_s == pytest.approx(p.step_time_s, rel=0.01)
    assert p.bound == "launch" and p.host_wait_s > 0.5 * p.step_time_s
    big = [R.Op(f"k{i}", "elementwise", "forward", 1.0, 1e9) for i in range(100)]
    b = R.time_ops(big, c, 1)
    assert b.host_wait_s == pytest.approx(R.HOST_S_PER_KERNEL)  # only the first issue
    assert b.step_time_s == pytest.approx(sum(t.seconds for t in b.op_times()) + b.host_wait_s)


def test_wave_quantisation_counts_idle_sms() -> None:
    # 1024 x 512 outputs: 8 x 4 = 32 tiles of 128 x 128
    assert waves.wave_efficiency(1024, 512, 32) == 1.0
    assert waves.wave_efficiency(1024, 512, 142) == pytest.approx(32 / 142)  # one part-full wave
    assert waves.wave_efficiency(1024, 512, 30) == pytest.approx(32 / 60)  # a second wave of 2
    assert waves.wave_efficiency(1024, 512, 0) == 1.0  # SM count unknown: no correction


def test_prefill_pays_for_idle_sms_only_with_the_shapes(cat: Catalog) -> None:
    """Llama 3 8B's k/v projections (1024 x 4096) at 512 tokens fill 32 tiles: a 142-SM
    card leaves most SMs idle, so prefill slows; decode (GEMV, bandwidth) does not move."""
    c = card(cat, "RTX 6000 Ada Generation")
    assert c.sm_count == 142
    arch = cat.architectures[c.architecture]
    shapes = ((4096, 4096, 64), (1024, 4096, 64), (14336, 4096, 64), (4096, 14336, 32))
    plain = transformer_speed.generate_timing(c, arch, **LLAMA8B)  # type: ignore[arg-type]
    waved = transformer_speed.generate_timing(c, arch, **LLAMA8B, gemm_shapes=shapes)  # type: ignore[arg-type]
    assert plain is not None and waved is not None
    assert waved.phases["prefill"].throughput < 0.9 * plain.phases["prefill"].throughput
    assert waved.phases["decode"].throughput == plain.phases["decode"].throughput
    # the slowdown is the FLOP-weighted idle share: work / (work / efficiency)
    work = [2 * o * i * n * 512 for o, i, n in shapes]
    seen = [
        w / waves.wave_efficiency(o, 512, 142) for w, (o, _, _) in zip(work, shapes, strict=True)
    ]
    other = 2 * 8_030_261_248 * 512 - sum(work)
    attn = 4 * 32 * 32 * 128 * 512 * 513 / 2
    expect = (other + sum(work) + attn) / (other + sum(seen) + attn)
    assert waved.phases["prefill"].throughput / plain.phases["prefill"].throughput == pytest.approx(
        expect, rel=0.02
    )
