"""What a no-grad forward of a CNN holds at its peak, worked by hand.

PyTorch frees a tensor when its last reader has returned, so while a convolution
runs its input and its output are alive (and the data batch, which the caller
holds). Beside them the convolution's scratch: oneDNN reorders the input into its
blocked layout and computes into an output-sized buffer, but the input's reorder
is freed before the output is made and the result is freed before a fused
activation makes its own output: one buffer, the larger of input and output, not
both (the estimate counted both, one activation too many: +18 % to +30 % on
DenseNet- and VGG-style graphs). Elements per sample below; fp32 is 4 bytes.
"""

from __future__ import annotations

from pathlib import Path

from gputui.fit.core.breakdown import peak_phase as peak
from gputui.fit.core.precision import policy
from gputui.fit.graph.memory import model_phases
from gputui.fit.importers.modelsfile import ModelSpec, layer_models, parse_models
from gputui.fit.importers.modelsfile import load_models as load_all

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def load_models(path: Path) -> tuple[ModelSpec, ...]:
    return layer_models(load_all(path))


def sequential(layers: str, shape: str, mode: str = "inference") -> ModelSpec:
    text = (
        f'[[model]]\nname = "t"\ninput_shape = {shape}\noptimizer = "sgd"\n'
        f'mode = "{mode}"\nlayers = [ {layers} ]\n'
    )
    return parse_models(text)[0]


def per_sample_at_peak(m: ModelSpec, batch: int = 8) -> tuple[str, int, int]:
    phase, parts = peak(model_phases(m, policy("fp32"), "cpu"), batch)
    return phase.name, phase.fixed.total, phase.per_sample.total


def test_a_conv_chain_holds_input_output_and_the_larger_of_the_two() -> None:
    # 16x16x8 -> conv 16 -> conv 32 -> conv(1x1) 8, no bias, no activation
    m = sequential(
        '{ type = "Conv2D", filters = 16, kernel_size = 3, padding = "same", use_bias = false },'
        '{ type = "Conv2D", filters = 32, kernel_size = 3, padding = "same", use_bias = false },'
        '{ type = "Conv2D", filters = 8, kernel_size = 1, use_bias = false }',
        "[16, 16, 8]",
    )
    x, a, b, c = 16 * 16 * 8, 16 * 16 * 16, 16 * 16 * 32, 16 * 16 * 8
    weights = (9 * 8 * 16 + 9 * 16 * 32 + 32 * 8) * 4
    phases = model_phases(m, policy("fp32"), "cpu")
    # the batch x is held throughout; each conv: its input, its output, max(input, output)
    assert [p.per_sample.total for p in phases] == [
        4 * (x + a + max(x, a)),
        4 * (x + a + b + max(a, b)),
        4 * (x + b + c + max(b, c)),
    ]
    name, fixed, per = per_sample_at_peak(m)
    assert name == "forward Conv2D (layers[1])"
    assert fixed == weights
    assert per == 4 * (x + a + 2 * b)  # not x + 2a + 2b: the input's reorder is gone


def test_a_fused_relu_is_the_same_one_buffer() -> None:
    # relu(conv(x)): the pre-activation and relu's output, never the reorder as well
    m = sequential(
        '{ type = "Conv2D", filters = 32, kernel_size = 3, padding = "same", activation = "relu" }',
        "[16, 16, 8]",
    )
    x, out = 16 * 16 * 8, 16 * 16 * 32
    assert per_sample_at_peak(m)[2] == 4 * (x + 2 * out)


DENSE_BLOCK = """
[[model]]
name = "dense-block"
kind = "functional"
mode = "inference"
inputs = [ { name = "x", shape = [8, 8, 16] } ]
layers = [
  { name = "bn1", type = "BatchNormalization", inputs = ["x"] },
  { name = "r1", type = "ReLU" },
  { name = "c1", type = "Conv2D", filters = 8, kernel_size = 3, padding = "same", use_bias = false },
  { name = "cat1", type = "Concatenate", inputs = ["x", "c1"] },
  { name = "bn2", type = "BatchNormalization" },
  { name = "r2", type = "ReLU" },
  { name = "c2", type = "Conv2D", filters = 8, kernel_size = 3, padding = "same", use_bias = false },
  { name = "cat2", type = "Concatenate", inputs = ["cat1", "c2"] },
  { name = "gap", type = "GlobalAveragePooling2D" },
  { name = "out", type = "Dense", units = 10 },
]
"""


def test_a_dense_block_peaks_at_the_conv_reading_the_widest_concatenation() -> None:
    (m,) = parse_models(DENSE_BLOCK)
    px = 8 * 8
    x, g, cat1, cat2 = 16 * px, 8 * px, 24 * px, 32 * px
    phases = {
        p.name.split("'")[1]: p.per_sample.total for p in model_phases(m, policy("fp32"), "cpu")
    }
    # x (the batch) is held by the caller all along; cat1 waits for cat2 across layer 2
    assert phases["r1"] == 4 * (x + x + x)  # batch, bn1's output, relu's
    assert phases["c1"] == 4 * (x + x + g + max(x, g))  # batch, r1, c1, r1's reorder
    assert phases["cat1"] == 4 * (x + g + cat1)
    assert phases["r2"] == 4 * (x + cat1 + cat1 + cat1)  # cat1 still held, bn2, r2
    # c2 reads r2 (cat1's width) while cat1 waits: batch, cat1, r2, c2, r2's reorder
    assert phases["c2"] == 4 * (x + cat1 + cat1 + g + cat1)
    assert phases["cat2"] == 4 * (x + cat1 + g + cat2)
    name, _, per = per_sample_at_peak(m)
    assert name == "forward Conv2D 'c2' (layers[6])"
    assert per == 4 * (x + 3 * cat1 + g)


def test_separable_and_transposed_convs_hold_what_their_steps_make() -> None:
    # SeparableConv2D: depthwise to mid, then pointwise with mid held: mid's reorder or
    # the pointwise result beside mid and the output
    sep = sequential(
        '{ type = "SeparableConv2D", filters = 24, kernel_size = 3, padding = "same", '
        "depth_multiplier = 2 }",
        "[16, 16, 48]",
    )
    x, mid, out = 16 * 16 * 48, 16 * 16 * 96, 16 * 16 * 24
    assert per_sample_at_peak(sep)[2] == 4 * (x + out + mid + max(mid, out))
    # Conv2DTranspose, bias or not: its output and two more output-sized buffers (oneDNN's
    # result and a copy) at once, measured as 3.0x the output on CPU with and without one
    for bias in ("true", "false"):
        tr = sequential(
            '{ type = "Conv2DTranspose", filters = 32, kernel_size = 2, strides = 2, '
            f"use_bias = {bias} }}",
            "[16, 16, 32]",
        )
        x, out = 16 * 16 * 32, 32 * 32 * 32
        assert per_sample_at_peak(tr)[2] == 4 * (x + out + 2 * out)


def test_a_transposed_convolution_from_a_larger_input_keeps_its_reorder() -> None:
    # 16x16x128 -> 32x32x3: the input is the larger; its reorder and one output-sized
    # buffer beside the output
    tr = sequential(
        '{ type = "Conv2DTranspose", filters = 3, kernel_size = 4, strides = 2, '
        'padding = "same", use_bias = false }',
        "[16, 16, 128]",
    )
    x, out = 16 * 16 * 128, 32 * 32 * 3
    assert per_sample_at_peak(tr)[2] == 4 * (x + out + x + out)


def test_dcgan_generator_inference_peaks_at_three_outputs_of_a_transposed_conv() -> None:
    # benchmarks/fit_cnn_inference.toml's dcgan-generator, measured 69.68 MiB at batch 64
    # on CPU (benchmarks/fit_accuracy.py); it read 53.68 MiB when one scratch was counted
    models = {m.name: m for m in load_models(BENCHMARKS / "fit_cnn_inference.toml")}
    _, parts = peak(model_phases(models["dcgan-generator"], policy("fp32"), "cpu"), 64)
    assert abs(parts.total / (69.68 * 2**20) - 1) < 0.02


def test_training_backward_keeps_both_scratch_buffers() -> None:
    # only the forward changed: a conv's backward still counts an input- and an
    # output-sized scratch beside the gradients (checked on CPU before this change)
    m = sequential(
        '{ type = "Conv2D", filters = 32, kernel_size = 3, padding = "same" }',
        "[16, 16, 8]",
        mode="train",
    )
    stats = m.network.nodes[0].stats if m.network else None
    assert stats is not None
    x, out = 16 * 16 * 8, 16 * 16 * 32
    assert stats.forward_transient == max(x, out)
    assert stats.backward_transient == x + out


ATTENTION = """
[[model]]
name = "att"
kind = "functional"
mode = "inference"
inputs = [ { name = "x", shape = [16, 32] } ]
layers = [
  { name = "att", type = "MultiHeadAttention", num_heads = 2, key_dim = 8, inputs = ["x", "x"] },
]
"""


def test_attention_without_autograd_holds_the_output_projections_einsum_result() -> None:
    # Keras' EinsumDense adds its bias into a new tensor: at the output projection
    # the einsum's result and the output are alive with q, k, v and the heads
    (m,) = parse_models(ATTENTION)
    x, qkv, heads, out = 16 * 32, 3 * 16 * 2 * 8, 16 * 2 * 8, 16 * 32
    assert per_sample_at_peak(m)[2] == 4 * (x + out + qkv + heads + out)
    no_bias = parse_models(ATTENTION.replace("key_dim = 8,", "key_dim = 8, use_bias = false,"))
    assert per_sample_at_peak(no_bias[0])[2] == 4 * (x + out + qkv + heads)


def test_a_2d_max_pool_makes_its_int64_indices_without_autograd_too() -> None:
    # max_pool2d runs with indices under no_grad (its 1-D form does not): at the pool
    # the batch (its input), the output and 8 bytes of indices per output element
    m = sequential('{ type = "MaxPooling2D", pool_size = 2 }', "[32, 32, 16]")
    x, out = 32 * 32 * 16, 16 * 16 * 16
    assert per_sample_at_peak(m)[2] == 4 * x + 4 * out + 8 * out
    one_d = sequential('{ type = "MaxPooling1D", pool_size = 2 }', "[64, 16]")
    assert per_sample_at_peak(one_d)[2] == 4 * (64 * 16 + 32 * 16)


def test_same_padding_copies_the_input_only_where_it_is_asymmetric() -> None:
    # 33 -> pool 2 stride 2 "same": one row and column of padding, on one side only:
    # Keras' torch backend pads a 34x34 copy; 3x3 stride 1 pads 1 each side natively
    odd = sequential(
        '{ type = "AveragePooling2D", pool_size = 2, padding = "same" }', "[33, 33, 8]"
    )
    x, out = 33 * 33 * 8, 17 * 17 * 8
    assert per_sample_at_peak(odd)[2] == 4 * (x + 34 * 34 * 8 + out)
    even = sequential(
        '{ type = "AveragePooling2D", pool_size = 3, strides = 1, padding = "same" }',
        "[32, 32, 8]",
    )
    assert per_sample_at_peak(even)[2] == 4 * (2 * 32 * 32 * 8)


def test_onednn_lstm_reorders_its_weights_without_autograd_too() -> None:
    # CPU: oneDNN's LSTM copies its weights into its own layout at every call; the
    # copy lives while the layer runs (with autograd it is kept for backward)
    m = sequential('{ type = "LSTM", units = 32 }', "[10, 16]")
    params = 4 * 32 * (16 + 32 + 1)
    cpu = model_phases(m, policy("fp32"), "cpu")[0]
    cuda = model_phases(m, policy("fp32"), "cuda")[0]
    assert cpu.fixed.total - cuda.fixed.total == params * 4
    assert cpu.per_sample == cuda.per_sample
