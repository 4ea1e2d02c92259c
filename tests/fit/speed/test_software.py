"""What the framework does with the model (layout, optimizer kernels, unfused attention)
and the GEMMs' waves over the SMs change the step time, each by its own mechanism."""

from __future__ import annotations

import pytest

from gputui.catalog import load_catalog
from gputui.catalog.catalog import Catalog
from gputui.fit.core import optimizer_traffic, software
from gputui.fit.core import roofline as R
from gputui.fit.graph import step_ops as graph_speed
from gputui.fit.importers.modelsfile import ModelSpec, parse_models

CONV = (
    '{ type = "Conv2D", filters = 64, kernel_size = 3, padding = "same" }, '
    '{ type = "BatchNormalization" }, { type = "ReLU" }, '
    '{ type = "Conv2D", filters = 64, kernel_size = 3, padding = "same" }'
)
NCHW = software.Software(memory_format="channels_first")
NHWC = software.Software(memory_format="channels_last")


@pytest.fixture(scope="module")
def cat() -> Catalog:
    return load_catalog()


def model(layers: str, shape: str, optimizer: str = "sgd") -> ModelSpec:
    text = (
        f'[[model]]\nname = "t"\ninput_shape = {shape}\noptimizer = "{optimizer}"\n'
        f'mode = "train"\nlayers = [ {layers} ]\n'
    )
    return parse_models(text)[0]


def step(
    cat: Catalog, name: str, m: ModelSpec, prec: str, batch: int, sw: software.Software
) -> float:
    c = cat.find(name)
    p = graph_speed.profile(m, c, cat.architectures.get(c.architecture), prec, batch, None, sw)
    assert p is not None
    return p.step_time_s


def transposes(ops: list[R.Op]) -> list[R.Op]:
    return [o for o in ops if "NCHW" in o.name]


def test_nchw_transposes_each_tensor_core_conv_call_and_nothing_else(cat: Catalog) -> None:
    m = model(CONV, "[32, 32, 64]")
    batch = 8
    ops = graph_speed.model_ops(m, "amp_fp16", batch, None, NCHW)
    t = transposes(ops)
    # two convolutions x (forward, input gradient of the second, weight gradient): the
    # first conv's input is the data, which needs no gradient
    assert len(t) == 5 and all(o.tensor_path_only and o.op_class == "elementwise" for o in t)
    fwd = next(o for o in t if o.layer == 3 and o.pass_ == "forward")
    y = 32 * 32 * 64 * batch * 2  # the conv's 16-bit output
    x = 32 * 32 * 64 * batch * 2  # its 16-bit input (the ReLU's output)
    assert fwd.bytes == 2 * (x + y)
    # PyTorch's default is NCHW; channels-last, FP32 on the CUDA cores and dense layers:
    # no transposes
    assert software.DEFAULT_SOFTWARE == NCHW
    assert not transposes(graph_speed.model_ops(m, "amp_fp16", batch, None, NHWC))
    assert not transposes(graph_speed.model_ops(m, "fp32", batch, None, NCHW))
    dense = model('{ type = "Dense", units = 64 }', "[64]")
    assert not transposes(graph_speed.model_ops(dense, "amp_fp16", batch, None, NCHW))


def test_nchw_costs_only_where_tensor_cores_run_the_precision(cat: Catalog) -> None:
    m = model(CONV, "[56, 56, 64]")
    assert step(cat, "RTX 3090", m, "amp_fp16", 32, NCHW) > 1.1 * step(
        cat, "RTX 3090", m, "amp_fp16", 32, NHWC
    )
    # a GTX 1080 Ti has no tensor cores: cuDNN runs NCHW natively, nothing is transposed
    assert step(cat, "GTX 1080 Ti", m, "amp_fp16", 32, NCHW) == pytest.approx(
        step(cat, "GTX 1080 Ti", m, "amp_fp16", 32, NHWC)
    )


def test_optimizer_implementations_move_and_launch_what_their_code_does() -> None:
    layers = ", ".join('{ type = "Dense", units = 256 }' for _ in range(4))
    m = model(layers, "[256]", optimizer="adam")
    params = m.network.trainable_params if m.network else 0
    tensors = 8  # 4 kernels + 4 biases

    def opt(impl: software.OptimizerImpl) -> list[R.Op]:
        ops = graph_speed.model_ops(m, "fp32", 4, None, software.Software(optimizer=impl))
        return [o for o in ops if o.pass_ == "optimizer"]

    foreach, fused, loop, bert = opt("foreach"), opt("fused"), opt("loop"), opt("bertadam")
    assert (
        sum(o.bytes for o in foreach) == optimizer_traffic.OPTIMIZER_TRAFFIC["adam"][0] * params * 4
    )
    assert sum(o.bytes for o in fused) == optimizer_traffic.FUSED_TRAFFIC["adam"] * params * 4
    assert sum(o.kernels for o in fused) == 1
    # the loop: the same traffic, but every op once per tensor, layer by layer
    assert sum(o.bytes for o in loop) == sum(o.bytes for o in foreach)
    assert (
        len(loop) == 4
        and sum(o.kernels for o in loop) == tensors * optimizer_traffic.OPTIMIZER_TRAFFIC["adam"][1]
    )
    accesses, per_tensor = optimizer_traffic.BERTADAM_TRAFFIC
    assert sum(o.bytes for o in bert) == accesses * params * 4
    assert sum(o.kernels for o in bert) == tensors * per_tensor
    # BertAdam is an Adam: for SGD it is the plain loop
    sgd = model(layers, "[256]", optimizer="sgd")
    a = graph_speed.model_ops(sgd, "fp32", 4, None, software.Software(optimizer="bertadam"))
    b = graph_speed.model_ops(sgd, "fp32", 4, None, software.Software(optimizer="loop"))
    assert a == b


def test_a_per_tensor_loop_of_small_tensors_waits_on_the_host(cat: Catalog) -> None:
    layers = ", ".join('{ type = "Dense", units = 64 }' for _ in range(40))
    m = model(layers, "[64]", optimizer="adam")
    loop = step(cat, "H100 SXM5 80GB", m, "fp32", 8, software.Software(optimizer="loop"))
    foreach = step(cat, "H100 SXM5 80GB", m, "fp32", 8, software.DEFAULT_SOFTWARE)
    extra = 80 * optimizer_traffic.OPTIMIZER_TRAFFIC["adam"][1] * R.HOST_S_PER_KERNEL  # 80 tensors
    assert loop - foreach == pytest.approx(extra, rel=0.2)


def test_separate_score_scaling_and_mask_add_pass_over_the_maps_three_more_times() -> None:
    text = (
        '[[model]]\nname = "a"\nkind = "functional"\nmode = "train"\noptimizer = "adam"\n'
        'inputs = [ { name = "x", shape = [128, 64] } ]\n'
        'layers = [ { name = "att", type = "MultiHeadAttention", num_heads = 4, key_dim = 16, '
        'dropout = 0.1, inputs = ["x", "x"] } ]\n'
    )
    m = parse_models(text)[0]
    plain = graph_speed.model_ops(m, "amp_fp16", 2)
    split = graph_speed.model_ops(m, "amp_fp16", 2, None, software.Software(score_scale_mask=True))
    maps = 4 * 128 * 128 * 2
    extra = [o for o in split if o not in plain]
    assert {o.name.split(") ")[-1] for o in extra} == {
        "scores / sqrt(d)",
        "scores + mask",
        "scale backward",
    }
    assert sum(o.bytes for o in extra) == 3 * 2 * maps * 2  # read + write of 16-bit maps


def test_layer_gemms_pay_for_idle_sms_and_weight_gradients_do_not(cat: Catalog) -> None:
    dense = model('{ type = "Dense", units = 1024 }', "[1024]")
    ops = graph_speed.model_ops(dense, "amp_bf16", 64)
    fwd = next(o for o in ops if o.pass_ == "forward" and o.op_class == "matmul")
    wgrad = next(o for o in ops if o.pass_ == "backward_weight")
    assert fwd.gemm == (64, 1024) and wgrad.gemm == (0, 0)
    conv = model(
        '{ type = "Conv2D", filters = 32, kernel_size = 3, padding = "same" }', "[8, 8, 16]"
    )
    c_fwd = next(o for o in graph_speed.model_ops(conv, "amp_bf16", 4) if o.pass_ == "forward")
    assert c_fwd.gemm == (4 * 8 * 8, 32)  # implicit GEMM: one row per output position
    # 64 rows x 1024 columns = 8 tiles on an H100's 132 SMs: cuBLAS splits K = 1024 into
    # 8 slices of 128 (fit/core/waves.py), so 64 blocks run in one part-full wave, and the 7
    # extra fp32 partial outputs are written and read back
    card = cat.find("H100 SXM5 80GB")
    h100 = R.ceilings(card, cat.architectures.get(card.architecture), "bf16")
    assert h100 is not None and h100.sms == 132
    t = R.op_time(fwd, h100)
    assert t.compute_s == pytest.approx(
        fwd.flops / (h100.tensor_flops * R.EFFICIENCY["matmul"]) * 132 / 64  # type: ignore[operator]
    )
    partials = 2 * 7 * 64 * 1024 * 4 / (h100.bandwidth * R.EFFICIENCY["elementwise"])
    assert t.memory_s == pytest.approx(
        fwd.bytes / (h100.bandwidth * R.EFFICIENCY["matmul"]) + partials
    )
    # a convolution (cuDNN) keeps the unsplit wave model: 4 x 8 x 8 = 256 rows x 32 = 2 tiles
    c_t = R.op_time(c_fwd, h100)
    c_peak = h100.tensor_flops if c_fwd.tensor_cores else h100.cuda_core_flops
    assert c_t.compute_s == pytest.approx(
        c_fwd.flops / (c_peak * R.EFFICIENCY["matmul"]) * 132 / 2  # type: ignore[operator]
    )
    # the per-op view and the inlined step agree
    p = R.time_ops(ops, h100, 64)
    assert sum(x.seconds for x in p.op_times()) + p.host_wait_s == pytest.approx(p.step_time_s)


def test_tf32_is_never_slower_than_fp32(cat: Catalog) -> None:
    """TF32 mode allows the FP32 kernels: where the tensor path (with its NCHW transposes)
    is slower, the libraries run FP32, so a TF32 step takes the faster of the two."""
    m = model(CONV, "[56, 56, 64]")
    for name in ("GeForce RTX 3090", "RTX A6000", "A100 SXM4 80 GB"):
        tf32 = step(cat, name, m, "tf32", 64, NCHW)
        fp32 = step(cat, name, m, "fp32", 64, NCHW)
        assert tf32 <= fp32, name
    # GeForce Ampere: TF32 tensor rate = FP32 rate, so the transposes decide -> FP32 path
    assert step(cat, "GeForce RTX 3090", m, "tf32", 64, NCHW) == step(
        cat, "GeForce RTX 3090", m, "fp32", 64, NCHW
    )
    # A100: 156 TF32 vs 19.5 FP32 TFLOPS, the tensor path wins by far
    a100 = "A100 SXM4 80 GB"
    assert step(cat, a100, m, "tf32", 64, NCHW) < 0.5 * step(cat, a100, m, "fp32", 64, NCHW)
