"""Keras 3 on its torch backend, worked by hand: what it keeps beyond PyTorch eager
(fit/graph/keras_torch.py; measured in benchmarks/keras_runtime.md)."""

from __future__ import annotations

from dataclasses import replace

from gputui.fit.core.breakdown import peak_phase as peak
from gputui.fit.core.precision import policy
from gputui.fit.graph.memory import model_phases
from gputui.fit.importers.modelsfile import ModelSpec, parse_models

FP32 = policy("fp32")


def sequential(layers: str, shape: str, mode: str, optimizer: str = "sgd") -> ModelSpec:
    text = (
        f'[[model]]\nname = "t"\ninput_shape = {shape}\noptimizer = "{optimizer}"\n'
        f'mode = "{mode}"\nlayers = [ {layers} ]\n'
    )
    return parse_models(text)[0]


def keras(m: ModelSpec) -> ModelSpec:
    return replace(m, runtime="keras-torch")


CHAIN = (
    '{ type = "Dense", units = 64 }, { type = "Dense", units = 32 }, '
    '{ type = "Dense", units = 16 }, { type = "Dense", units = 8 }'
)


def test_the_functional_executor_keeps_every_output_until_the_call_returns() -> None:
    m = sequential(CHAIN, "[128]", "inference")
    x, outs = 128, (64, 32, 16, 8)
    last = model_phases(m, FP32, "cpu")[-1]
    # PyTorch: at the last layer its input and output (and the batch) are alive
    assert last.per_sample.total == 4 * (x + 16 + 8)
    last = model_phases(keras(m), FP32, "cpu")[-1]
    # Keras: every output made so far
    assert last.per_sample.total == 4 * (x + sum(outs))


def test_keras_training_forward_holds_the_previous_steps_gradients() -> None:
    m = sequential(CHAIN, "[128]", "train")
    grads = m.trainable_params * 4
    torch_fwd = [ph for ph in model_phases(m, FP32, "cpu") if ph.name.startswith("forward")]
    keras_fwd = [ph for ph in model_phases(keras(m), FP32, "cpu") if ph.name.startswith("forward")]
    assert [ph.fixed.gradients for ph in torch_fwd] == [0] * 4
    assert [ph.fixed.gradients for ph in keras_fwd] == [grads] * 4


def test_keras_batch_norm_keeps_a_full_size_copy_in_training() -> None:
    m = sequential(
        '{ type = "Dense", units = 64 }, { type = "BatchNormalization" }, '
        '{ type = "Dense", units = 8 }',
        "[32]",
        "train",
    )
    torch_loss = next(ph for ph in model_phases(m, FP32, "cpu") if ph.name == "loss backward")
    keras_loss = next(
        ph for ph in model_phases(keras(m), FP32, "cpu") if ph.name == "loss backward"
    )
    # x - mean, cloned for the in-place multiply by a factor that needs a gradient
    assert keras_loss.per_sample.activations - torch_loss.per_sample.activations == 4 * 64


def test_keras_adam_makes_three_parameter_sized_temporaries() -> None:
    m = sequential(CHAIN, "[128]", "train", optimizer="adam")
    p = m.trainable_params * 4
    step = model_phases(keras(m), FP32, "cpu")[-1]
    assert step.name == "optimizer step"
    assert step.fixed.workspace == 3 * p
    assert step.fixed.total == p + p + 2 * p + 3 * p  # weights, gradients, m and v, temps
    sgd = model_phases(keras(replace(m, optimizer="sgd")), FP32, "cpu")[-1]
    assert sgd.fixed.workspace == 0


def test_pytorch_and_unmodelled_runtimes_walk_alike() -> None:
    m = sequential(CHAIN, "[128]", "train", optimizer="adam")
    for runtime in ("keras-tensorflow", "keras-jax"):
        other = replace(m, runtime=runtime)
        assert (
            peak(model_phases(other, FP32, "cpu"), 8)[1] == peak(model_phases(m, FP32, "cpu"), 8)[1]
        )


CONV = '{ type = "Conv2D", filters = 32, kernel_size = 3, padding = "same", use_bias = false }'


def test_a_keras_convolution_copies_its_input_and_its_kernel() -> None:
    x, out, kernel = 16 * 16 * 8, 16 * 16 * 32, 3 * 3 * 8 * 32
    m = sequential(CONV, "[16, 16, 8]", "inference")
    torch_conv = model_phases(m, FP32, "cpu")[0]
    keras_conv = model_phases(keras(m), FP32, "cpu")[0]
    # the channels-first (then channels-last-strided) copy of its input beside the scratch
    assert keras_conv.per_sample.total - torch_conv.per_sample.total == 4 * x
    # the kernel's copy and oneDNN's reorder of it (a 3x3 kernel) while it runs
    assert keras_conv.fixed.total - torch_conv.fixed.total == 4 * 2 * kernel
    assert out  # the output is the same in both


def test_in_training_autograd_keeps_the_kernel_copy_until_the_backward() -> None:
    m = sequential(
        f'{CONV}, {{ type = "Flatten" }}, {{ type = "Dense", units = 4 }}', "[16, 16, 8]", "train"
    )
    kernel = 3 * 3 * 8 * 32
    phases = model_phases(keras(m), FP32, "cpu")
    loss = next(ph for ph in phases if ph.name == "loss backward")
    base = next(ph for ph in model_phases(m, FP32, "cpu") if ph.name == "loss backward")
    assert loss.fixed.activations - base.fixed.activations == 4 * kernel


def test_a_pointwise_kernel_is_not_reordered_again() -> None:
    one = '{ type = "Conv2D", filters = 32, kernel_size = 1, use_bias = false }'
    m = sequential(one, "[16, 16, 8]", "inference")
    extra = (
        model_phases(keras(m), FP32, "cpu")[0].fixed.total
        - model_phases(m, FP32, "cpu")[0].fixed.total
    )
    assert extra == 4 * 8 * 32


def test_a_keras_gan_steps_with_keras_optimizers() -> None:
    gan = parse_models(
        """
[[model]]
name = "g"
kind = "gan"
optimizer = "adam"
[model.generator]
input_shape = [8]
layers = [{ type = "Dense", units = 16 }]
[model.discriminator]
input_shape = [16]
layers = [{ type = "Dense", units = 1 }]
"""
    )[0]
    steps = {ph.name: ph for ph in model_phases(keras(gan), FP32, "cpu")}
    gen_params = 8 * 16 + 16
    disc_params = 16 + 1
    assert steps["generator optimizer step"].fixed.workspace == 3 * 4 * gen_params
    assert steps["discriminator optimizer step"].fixed.workspace == 3 * 4 * disc_params


def test_a_keras_pooling_copies_its_input_without_autograd_too() -> None:
    m = sequential('{ type = "MaxPooling2D", pool_size = 2 }', "[16, 16, 8]", "inference")
    torch_pool = model_phases(m, FP32, "cpu")[0]
    keras_pool = model_phases(keras(m), FP32, "cpu")[0]
    assert keras_pool.per_sample.total - torch_pool.per_sample.total == 4 * 16 * 16 * 8
