"""The memory model against hand-worked PyTorch bookkeeping, and its invariants."""

from __future__ import annotations

import pytest

from gputui.catalog.models import Card
from gputui.fit.core.batch import pow2_floor
from gputui.fit.core.breakdown import peak_phase as peak
from gputui.fit.core.precision import policy
from gputui.fit.core.target import Target
from gputui.fit.core.verdict import verdict
from gputui.fit.graph.estimate import check, memory_model
from gputui.fit.graph.memory import model_phases
from gputui.fit.importers.modelsfile import ModelSpec, parse_models


def model(layers: str, shape: str, optimizer: str = "sgd", mode: str = "train") -> ModelSpec:
    text = (
        f'[[model]]\nname = "t"\ninput_shape = {shape}\noptimizer = "{optimizer}"\n'
        f'mode = "{mode}"\nlayers = [ {layers} ]\n'
    )
    return parse_models(text)[0]


def cpu_peak(m: ModelSpec, batch: int, precision: str = "fp32") -> int:
    return peak(model_phases(m, policy(precision), "cpu"), batch)[1].total


def test_single_dense_by_hand() -> None:
    # Dense(8 -> 4) with bias, SGD, fp32: 36 params = 144 B of weights, 144 B of gradients.
    # Per sample: the input batch (32 B) stays alive; the loss keeps the output (16 B).
    # Loss backward: weights + batch + output + its gradient      = 144 + 64 b
    # Dense backward: weights + grads + batch + output gradient   = 288 + 48 b
    #   (the output was freed by the loss; no input gradient for the data)
    m = model('{ type = "Dense", units = 4 }', "[8]")
    assert cpu_peak(m, 1) == 288 + 48
    assert cpu_peak(m, 100) == 144 + 64 * 100


def test_adam_adds_two_states_and_cpu_temporaries() -> None:
    # Adam keeps exp_avg and exp_avg_sq (2 x 144 B); its CPU step needs sqrt and a
    # quotient of the largest tensor (32 floats): 2 x 128 B.
    sgd = model('{ type = "Dense", units = 4 }', "[8]")
    adam = model('{ type = "Dense", units = 4 }', "[8]", optimizer="adam")
    step = 144 + 288 + 144 + 256 + 32  # weights, state, gradients, temporaries, batch
    assert cpu_peak(adam, 1) == max(step, 288 + 48 + 288)
    assert cpu_peak(adam, 100) - cpu_peak(sgd, 100) == 288


def test_relu_output_shared_with_next_layer_is_counted_once() -> None:
    # Dense+relu keeps its output; the next Dense keeps the same tensor as its input.
    m = model(
        '{ type = "Dense", units = 100, activation = "relu" }, { type = "Dense", units = 1 }',
        "[10]",
    )
    shared = model('{ type = "Dense", units = 100, activation = "relu" }', "[10]")
    big = 10_000
    # the second model adds a 1-wide output: far less than another 100-wide copy
    extra = cpu_peak(m, big) - cpu_peak(shared, big)
    assert extra < 100 * 4 * big * 0.5


def test_dropout_mask_is_one_byte_on_cuda_and_a_float_on_cpu() -> None:
    m = model(
        '{ type = "Dense", units = 64 }, { type = "Dropout", rate = 0.5 }, { type = "Dense", units = 1 }',
        "[64]",
    )
    cuda = peak(model_phases(m, policy("fp32"), "cuda"), 1000)[1].activations
    cpu = peak(model_phases(m, policy("fp32"), "cpu"), 1000)[1].activations
    assert cpu - cuda == 3 * 64 * 1000


def test_inference_keeps_only_the_live_pair_of_activations() -> None:
    layers = ", ".join(['{ type = "Dense", units = 256, activation = "relu" }'] * 6)
    train = model(layers, "[256]")
    infer = model(layers, "[256]", mode="inference")
    b = 1000
    t = peak(model_phases(train, policy("fp32"), "cpu"), b)[1]
    i = peak(model_phases(infer, policy("fp32"), "cpu"), b)[1]
    assert i.gradients == 0 and i.optimizer_state == 0
    # at most input batch + layer input + output + pre-activation
    assert i.activations <= 4 * 256 * 4 * b
    assert t.activations >= 6 * 256 * 4 * b


def test_precision_changes_weight_bytes_as_documented() -> None:
    m = model('{ type = "Dense", units = 1000 }', "[1000]", optimizer="adam")
    params = 1000 * 1000 + 1000
    fp32 = memory_model(m, "fp32", backend="cpu").breakdown(1)[1]
    bf16 = memory_model(m, "bf16", backend="cpu").breakdown(1)[1]
    amp = memory_model(m, "amp_bf16", backend="cpu").breakdown(1)[1]
    assert fp32.weights == 4 * params
    assert bf16.weights == 2 * params
    assert fp32.optimizer_state == 8 * params and bf16.optimizer_state == 4 * params
    # AMP: fp32 master weights plus autocast's 16-bit copy while the graph is alive
    assert amp.optimizer_state == fp32.optimizer_state
    assert amp.weights in (4 * params, 6 * params)


def test_frozen_discriminator_keeps_no_dense_inputs_and_gets_no_gradients() -> None:
    text = (
        '[[model]]\nname = "g"\nkind = "gan"\noptimizer = "sgd"\n'
        '[model.generator]\ninput_shape = [10]\nlayers = [ { type = "Dense", units = 4096 } ]\n'
        '[model.discriminator]\ninput_shape = [4096]\nlayers = [ { type = "Dense", units = 4096 }, '
        '{ type = "Dense", units = 1 } ]\n'
    )
    (gan,) = parse_models(text)
    phases = model_phases(gan, policy("fp32"), "cpu")
    g_phases = [p for p in phases if p.name.startswith("generator through frozen D: backward")]
    assert g_phases
    d_grads = (4096 * 4096 + 4096 + 4097) * 4
    g_grads = (10 * 4096 + 4096) * 4
    # D's own gradients stay allocated from its step; no new D gradients appear
    assert max(p.fixed.gradients for p in g_phases) == d_grads + g_grads


CARD = Card.model_validate(
    {
        "name": "Test 1GB",
        "nvml_names": ["Test 1GB"],
        "architecture": "ampere",
        "compute_capability": "8.6",
        "segment": "consumer",
        "memory_gib": 1.0,
        "fp32_tflops": 10.0,
        "bf16_tensor_tflops": 40.0,
        "source": "test",
    }
)


def test_max_batch_is_the_exact_boundary() -> None:
    m = model(
        '{ type = "Dense", units = 512, activation = "relu" }, { type = "Dense", units = 10 }',
        "[784]",
    )
    mm = memory_model(m, "fp32", "8.6")
    limit = CARD.memory_bytes
    best = mm.max_batch(limit)
    assert best > 0
    assert mm.peak_bytes(best) <= limit < mm.peak_bytes(best + 1)
    assert pow2_floor(best) <= best < 2 * pow2_floor(best)


def test_peak_grows_with_batch() -> None:
    m = model(
        '{ type = "Conv2D", filters = 8, kernel_size = 3 }, { type = "Flatten" }, { type = "Dense", units = 1 }',
        "[16, 16, 3]",
    )
    mm = memory_model(m, "fp32", "8.6")
    peaks = [mm.peak_bytes(b) for b in (1, 2, 4, 8, 64)]
    assert peaks == sorted(peaks) and peaks[0] < peaks[-1]


@pytest.mark.parametrize(
    ("peak_bytes", "expected"),
    [(899, "fits"), (900, "fits"), (901, "tight"), (1000, "tight"), (1001, "does not fit")],
)
def test_verdict_thresholds(peak_bytes: int, expected: str) -> None:
    assert verdict(peak_bytes, 1000) == expected


def test_check_reports_free_memory_verdict_separately() -> None:
    m = model('{ type = "Dense", units = 4096 }', "[4096]")
    target = Target("Test", CARD.memory_bytes, None, CARD, "8.6", memory_free=300 * 2**20)
    result = check(m, target, precision="fp32")
    (e,) = result.estimates
    assert e.verdict == "fits"
    assert e.verdict_free == "does not fit"  # the CUDA context alone takes 400 MiB
    assert e.max_batch_size_free == 0
    assert e.speed is not None and e.speed.peak_tflops == 10.0


def test_autocast_keeps_layer_norm_in_fp32() -> None:
    # Under AMP, layer_norm runs in fp32: its output is 4 bytes and it keeps an fp32
    # copy of its input; pure bf16 keeps 2-byte tensors throughout.
    m = model('{ type = "Dense", units = 1000 }, { type = "LayerNormalization" }', "[1000]")
    b = 10_000  # activations dominate the peak
    amp = peak(model_phases(m, policy("amp_bf16"), "cuda"), b)[1].activations
    bf16 = peak(model_phases(m, policy("bf16"), "cuda"), b)[1].activations
    # fp32 output (+2 B) and fp32 input copy (+4 B) per element, fp32 data batch (+2 B)
    assert amp - bf16 >= 8 * 1000 * b
