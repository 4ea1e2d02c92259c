"""Functional models: parsing, errors, hand-worked lifetimes, and Keras' parameter counts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gputui.core.errors import UserError
from gputui.fit.core.breakdown import Phase
from gputui.fit.core.precision import policy
from gputui.fit.graph.memory import model_phases
from gputui.fit.importers.modelsfile import ModelSpec, parse_model_table, parse_models

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "keras"


def graph(
    layers: str, inputs: str = '[ { name = "x", shape = [8] } ]', extra: str = ""
) -> ModelSpec:
    text = (
        f'[[model]]\nname = "g"\nkind = "functional"\noptimizer = "sgd"\n{extra}'
        f"inputs = {inputs}\nlayers = [ {layers} ]\n"
    )
    return parse_models(text, "g.toml")[0]


def phase(m: ModelSpec, name: str, backend: str = "cpu") -> Phase:
    found = [p for p in model_phases(m, policy("fp32"), backend) if p.name == name]  # type: ignore[arg-type]
    assert len(found) == 1, [p.name for p in model_phases(m, policy("fp32"), backend)]  # type: ignore[arg-type]
    return found[0]


# ------------------------------------------------------------------ lifetimes


SKIP = (
    '{ name = "a", type = "Dense", units = 16 }, '
    '{ name = "n", type = "GaussianNoise", stddev = 0.1 }, '
    '{ name = "r", type = "Rescaling", scale = 2.0 }, '
    '{ name = "s", type = "Add", inputs = ["a", "r"] }, '
    '{ name = "c", type = "Dense", units = 1 }'
)


def test_skip_tensor_lives_until_its_last_reader_by_hand() -> None:
    # Per sample, fp32: the batch x is 32 B; a, n, r, s are 16 floats = 64 B each.
    # Nobody saves a (Add and GaussianNoise keep nothing), but Add reads it: alive
    # from its Dense until the Add. At Rescaling: a + n + r + r's scratch = 256 B.
    m = graph(SKIP)
    assert phase(m, "forward Rescaling 'r' (layers[2])").per_sample.activations == 32 + 256
    # at the Add, n is gone: a + r + s
    assert phase(m, "forward Add 's' (layers[3])").per_sample.activations == 32 + 192


def test_skip_gradient_waits_across_the_branch_by_hand() -> None:
    # Backward: Add hands one 64 B gradient to a and r (no copy). At GaussianNoise:
    # that buffer (held by a), n's gradient from Rescaling, and the new gradient for
    # a = 192 B; it is then summed into a's in place (a holds the only reference).
    m = graph(SKIP)
    assert phase(m, "backward GaussianNoise 'n' (layers[1])").per_sample.workspace == 192
    assert phase(m, "backward Add 's' (layers[3])").per_sample.workspace == 64
    names = [p.name for p in model_phases(m, policy("fp32"), "cpu")]
    assert not any("gradient sum" in n for n in names)


def test_shared_layer_weights_once_gradient_arrives_twice_by_hand() -> None:
    # Dense(4 -> 3) called on two inputs: 15 parameters (60 B) counted once; the
    # second call's backward runs first and makes .grad, the first call's backward
    # makes another 60 B gradient that is then added into it.
    m = graph(
        '{ name = "d", type = "Dense", units = 3, inputs = ["x1"] }, '
        '{ name = "d2", reuse = "d", inputs = ["x2"] }, '
        '{ name = "sum", type = "Add", inputs = ["d", "d2"] }',
        '[ { name = "x1", shape = [4] }, { name = "x2", shape = [4] } ]',
    )
    assert m.params == 15 and m.trainable_params == 15
    assert phase(m, "backward Dense 'd2'").fixed.gradients == 60
    assert phase(m, "backward Dense 'd' (layers[0])").fixed.gradients == 120
    assert phase(m, "optimizer step").fixed.gradients == 60
    # activations twice: each call's output is 12 B per sample, both alive at the Add
    add = phase(m, "forward Add 'sum' (layers[2])").per_sample.activations
    assert add == 2 * 16 + 3 * 12  # two batches, d, d2 and the sum


def test_a_chain_written_as_a_graph_is_estimated_like_the_stack() -> None:
    layers = [
        '{ type = "Conv2D", filters = 8, kernel_size = 3, activation = "relu" }',
        '{ type = "MaxPooling2D" }',
        '{ type = "Flatten" }',
        '{ type = "Dense", units = 10, activation = "softmax" }',
    ]
    seq = parse_models(
        f'[[model]]\nname = "s"\ninput_shape = [16, 16, 1]\nlayers = [ {", ".join(layers)} ]\n'
    )[0]
    fun = graph(", ".join(layers), '[ { name = "x", shape = [16, 16, 1] } ]')
    seq_sgd = parse_models(
        f'[[model]]\nname = "s"\noptimizer = "sgd"\ninput_shape = [16, 16, 1]\n'
        f"layers = [ {', '.join(layers)} ]\n"
    )[0]
    for p in ("fp32", "amp_bf16"):
        a = model_phases(seq_sgd, policy(p), "cuda")
        b = model_phases(fun, policy(p), "cuda")
        assert [(x.fixed, x.per_sample) for x in a] == [(x.fixed, x.per_sample) for x in b]
    assert seq.params == fun.params


def test_multiply_keeps_both_operands_add_keeps_none() -> None:
    base = '{ name = "a", type = "Dense", units = 16 }, { name = "b", type = "Dense", units = 16, inputs = ["x"] }, '
    add = graph(base + '{ name = "m", type = "Add", inputs = ["a", "b"] }')
    mul = graph(base + '{ name = "m", type = "Multiply", inputs = ["a", "b"] }')
    # the loss keeps m either way; Multiply also keeps a and b (64 B each) to backward
    ph_add = phase(add, "loss backward").per_sample.activations
    ph_mul = phase(mul, "loss backward").per_sample.activations
    assert ph_mul - ph_add == 128


def test_frozen_layers_make_no_gradients_and_keep_nothing_upstream() -> None:
    frozen = graph(
        '{ name = "a", type = "Dense", units = 64, trainable = false }, '
        '{ name = "b", type = "Dense", units = 64, activation = "relu", trainable = false }, '
        '{ name = "head", type = "Dense", units = 2 }'
    )
    assert frozen.trainable_params == 130
    ph = phase(frozen, "loss backward")
    # only the head's input (64 floats) and the output are kept; no relu output from b
    # as its own saved tensor beyond being the head's input
    assert ph.per_sample.activations == 32 + 256 + 8
    names = [p.name for p in model_phases(frozen, policy("fp32"), "cpu")]
    assert not any(n.startswith("backward Dense 'a'") for n in names)


def test_attention_eager_keeps_the_score_maps_sdpa_does_not() -> None:
    def mha(extra: str) -> ModelSpec:
        return graph(
            '{ name = "att", type = "MultiHeadAttention", num_heads = 4, key_dim = 8, '
            f'inputs = ["x", "x"]{extra} }}',
            '[ { name = "x", shape = [64, 32] } ]',
        )

    eager, sdpa = mha(', attention = "eager"'), mha(', attention = "sdpa"')
    auto_drop, auto = mha(", dropout = 0.1"), mha("")
    maps = 4 * 64 * 64 * 4  # heads x T x S floats
    e = phase(eager, "loss backward").per_sample.activations
    s = phase(sdpa, "loss backward").per_sample.activations
    # eager keeps the probabilities; sdpa keeps fp32 log-sum-exp per query row instead
    assert e - s == maps - 4 * 64 * 4
    assert phase(auto, "loss backward").per_sample.activations == s
    # with dropout Keras runs the eager path: probabilities, mask and dropped copy
    assert phase(auto_drop, "loss backward").per_sample.activations >= e + maps
    assert eager.params == sdpa.params == 4 * (32 * 32 + 32)


def test_peak_report_names_the_tensors_alive() -> None:
    from gputui.fit.core.target import Target
    from gputui.fit.graph.estimate import check

    m = graph(SKIP)
    c = check(m, Target("x", 2**34), batch_size=64, precision="fp32", with_peak_tensors=True)
    layers = {t.layer for t in c.peak_tensors}
    assert layers and layers <= {"a", "n", "r", "s", "c"}


# ------------------------------------------------------------------ errors


@pytest.mark.parametrize(
    ("layers", "inputs", "expected"),
    [
        (
            '{ name = "a", type = "Dense", units = 4, inputs = ["nope"] }',
            '[ { name = "x", shape = [8] } ]',
            "layers[0] 'a' (Dense): inputs: unknown input 'nope'",
        ),
        (
            '{ name = "a", type = "Dense", units = 4, inputs = ["b"] }, '
            '{ name = "b", type = "Dense", units = 4, inputs = ["a"] }',
            '[ { name = "x", shape = [8] } ]',
            "inputs: the graph has a cycle",
        ),
        (
            '{ name = "a", type = "Conv2D", filters = 16, kernel_size = 1 }, '
            '{ name = "b", type = "Conv2D", filters = 32, kernel_size = 1, inputs = ["x"] }, '
            '{ name = "s", type = "Add", inputs = ["a", "b"] }',
            '[ { name = "x", shape = [8, 8, 3] } ]',
            "layers[2] 's' (Add): inputs: shapes do not agree: input 0 is (8, 8, 16), input 1 is (8, 8, 32)",
        ),
        (
            '{ name = "a", type = "Dense", units = 4 }, { name = "a", type = "Dense", units = 4 }',
            '[ { name = "x", shape = [8] } ]',
            "layers[1] 'a': name: 'a' is used twice",
        ),
        (
            '{ name = "l", type = "LSTM", units = 4 }, { type = "Dense", units = 2, inputs = ["l:1"] }',
            '[ { name = "x", shape = [5, 3] } ]',
            "inputs: 'l' has 1 output(s), no output 1",
        ),
        (
            '{ name = "e", block = "missing" }',
            '[ { name = "x", shape = [8] } ]',
            "block: unknown block 'missing'",
        ),
        (
            '{ name = "a", type = "Dense", units = 4, inputs = ["x"], loss = "hinge2" }',
            '[ { name = "x", shape = [8] } ]',
            "loss: must be one of",
        ),
    ],
)
def test_graph_errors_name_model_layer_and_field(layers: str, inputs: str, expected: str) -> None:
    with pytest.raises(UserError) as info:
        graph(layers, inputs)
    message = str(info.value)
    assert message.startswith("g.toml: model 'g': ")
    assert expected in message
    assert "\n" not in message


def test_unused_layer_warns_but_unused_lstm_states_do_not() -> None:
    m = graph(
        '{ name = "l", type = "LSTM", units = 4, return_state = true }, '
        '{ name = "dead", type = "Dense", units = 3, inputs = ["l"] }, '
        '{ name = "out", type = "Dense", units = 2, inputs = ["l:0"] }',
        '[ { name = "x", shape = [5, 3] } ]',
        'outputs = ["out"]\n',
    )
    assert len(m.warnings) == 1 and "'dead'" in m.warnings[0]


def test_seq2seq_initial_state_and_block_reuse() -> None:
    m = graph(
        '{ name = "enc", type = "LSTM", units = 16, return_state = true, inputs = ["a"] }, '
        '{ name = "dec", type = "LSTM", units = 16, return_sequences = true, '
        'inputs = ["b", "enc:1", "enc:2"] }, '
        '{ name = "out", type = "Dense", units = 7, activation = "softmax" }',
        '[ { name = "a", shape = [9, 5] }, { name = "b", shape = [11, 7] } ]',
    )
    assert m.params == 4 * 16 * (5 + 16 + 1) + 4 * 16 * (7 + 16 + 1) + 16 * 7 + 7
    text = (
        '[[model]]\nname = "siam"\nkind = "functional"\n'
        'inputs = [ { name = "l", shape = [6] }, { name = "r", shape = [6] } ]\n'
        'layers = [ { name = "ea", block = "enc", inputs = ["l"] }, '
        '{ name = "eb", reuse = "ea", inputs = ["r"] }, '
        '{ name = "d", type = "Subtract", inputs = ["ea", "eb"] } ]\n'
        '[model.blocks.enc]\ninputs = ["v"]\n'
        'layers = [ { name = "h", type = "Dense", units = 5 }, { name = "o", type = "Dense", units = 2 } ]\n'
    )
    siam = parse_models(text)[0]
    assert siam.params == (6 * 5 + 5) + (5 * 2 + 2)
    frozen = parse_models(
        text.replace('block = "enc", inputs', 'block = "enc", trainable = false, inputs')
    )[0]
    assert frozen.trainable_params == 0 and frozen.params == siam.params


# ------------------------------------------------------- Keras parameter counts


def one(layer: str, shape: str, inputs: str | None = None) -> ModelSpec:
    ins = inputs or f'[ {{ name = "x", shape = {shape} }} ]'
    return graph(layer, ins)


@pytest.mark.parametrize(
    ("layer", "shape", "params", "trainable", "out"),
    [
        # Keras 3: kernel frozen, lora_kernel_a (in x r) and lora_kernel_b (r x out) train
        (
            '{ type = "Dense", units = 4, lora_rank = 2 }',
            "[8]",
            8 * 4 + 4 + 16 + 8,
            4 + 16 + 8,
            (4,),
        ),
        (
            '{ type = "Embedding", input_dim = 100, output_dim = 8, lora_rank = 4 }',
            "[5]",
            800 + 400 + 32,
            432,
            (5, 8),
        ),
        (
            '{ type = "EinsumDense", equation = "abc,cde->abde", output_shape = [-1, 4, 8], bias_axes = "de" }',
            "[6, 16]",
            16 * 32 + 32,
            544,
            (6, 4, 8),
        ),
        (
            '{ type = "Conv3D", filters = 4, kernel_size = 3 }',
            "[8, 8, 8, 2]",
            3 * 3 * 3 * 2 * 4 + 4,
            220,
            (6, 6, 6, 4),
        ),
        ('{ type = "GroupNormalization", groups = 4 }', "[8, 8, 16]", 32, 32, (8, 8, 16)),
        ('{ type = "PReLU" }', "[4, 4, 3]", 48, 48, (4, 4, 3)),
        ('{ type = "PReLU", shared_axes = [1, 2] }', "[4, 4, 3]", 3, 3, (4, 4, 3)),
        ('{ type = "Normalization" }', "[10]", 21, 0, (10,)),
        ('{ type = "PositionEmbedding", sequence_length = 50 }', "[20, 8]", 400, 400, (20, 8)),
        (
            '{ type = "TokenAndPositionEmbedding", vocabulary_size = 1000, sequence_length = 20, embedding_dim = 8 }',
            "[20]",
            8160,
            8160,
            (20, 8),
        ),
        (
            '{ type = "TimeDistributed", layer = { type = "Dense", units = 5 } }',
            "[7, 3]",
            20,
            20,
            (7, 5),
        ),
        ('{ type = "Cropping2D", cropping = [[1, 2], [0, 3]] }', "[10, 10, 2]", 0, 0, (7, 7, 2)),
        ('{ type = "ZeroPadding1D", padding = [2, 1] }', "[10, 2]", 0, 0, (13, 2)),
        ('{ type = "UpSampling1D", size = 3 }', "[10, 2]", 0, 0, (30, 2)),
        ('{ type = "RepeatVector", n = 4 }', "[6]", 0, 0, (4, 6)),
        ('{ type = "Permute", dims = [2, 1] }', "[3, 5]", 0, 0, (5, 3)),
        ('{ type = "Reshape", target_shape = [-1, 4] }', "[6, 2]", 0, 0, (3, 4)),
        ('{ type = "Resizing", height = 5, width = 7 }', "[10, 10, 3]", 0, 0, (5, 7, 3)),
        ('{ type = "CenterCrop", height = 4, width = 4 }', "[10, 10, 3]", 0, 0, (4, 4, 3)),
        ('{ type = "LayerNormalization", axis = [1, 2] }', "[4, 6]", 48, 48, (4, 6)),
        (
            '{ type = "Bidirectional", layer = { type = "GRU", units = 4, return_state = true } }',
            "[5, 3]",
            2 * (3 * 4 * (3 + 4) + 2 * 3 * 4),
            2 * (3 * 4 * (3 + 4) + 24),
            (8,),
        ),
        ('{ type = "MaxPooling3D" }', "[4, 4, 4, 2]", 0, 0, (2, 2, 2, 2)),
        ('{ type = "SpatialDropout2D", rate = 0.2 }', "[4, 4, 2]", 0, 0, (4, 4, 2)),
    ],
)
def test_layer_shapes_and_keras_parameter_counts(
    layer: str, shape: str, params: int, trainable: int, out: tuple[int, ...]
) -> None:
    m = one(layer, shape)
    assert (m.params, m.trainable_params) == (params, trainable)
    assert m.network is not None and m.network.output_shape == out


def test_relu_max_value_is_not_a_leaky_relu() -> None:
    relu6 = one('{ type = "ReLU", max_value = 6 }', "[100]")
    leaky = one('{ type = "LeakyReLU", negative_slope = 0.1 }', "[100]")
    clip = one('{ type = "ReLU", max_value = 4 }', "[100]")
    assert relu6.network is not None and leaky.network is not None and clip.network is not None
    assert relu6.network.nodes[0].stats.saves_input  # relu6 (hardtanh) keeps its input
    assert not clip.network.nodes[0].stats.saves_input  # relu then clip keep relu's output
    assert clip.network.nodes[0].stats.internal_saved


def test_attention_parameter_counts() -> None:
    mha = one(
        '{ type = "MultiHeadAttention", num_heads = 2, key_dim = 32, inputs = ["q", "v"] }',
        "",
        '[ { name = "q", shape = [10, 32] }, { name = "v", shape = [12, 32] } ]',
    )
    assert mha.params == 8416 and mha.network is not None
    assert mha.network.output_shape == (10, 32)
    add = one(
        '{ type = "AdditiveAttention", inputs = ["q", "v"] }',
        "",
        '[ { name = "q", shape = [10, 16] }, { name = "v", shape = [12, 16] } ]',
    )
    assert add.params == 16
    dot = one(
        '{ type = "Attention", use_scale = true, inputs = ["q", "v"] }',
        "",
        '[ { name = "q", shape = [10, 16] }, { name = "v", shape = [12, 16] } ]',
    )
    assert dot.params == 1


FIXTURE_NAMES = sorted(
    p.stem for p in FIXTURES.glob("*.json") if not p.name.endswith(".counts.json")
)


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_keras_fixture_parameter_counts_equal_keras(name: str) -> None:
    from gputui.fit.importers.keras import load_keras

    counts = json.loads((FIXTURES / f"{name}.counts.json").read_text())
    skip = "custom_layer_params" in counts
    km = load_keras(
        FIXTURES / f"{name}.json", input_shapes=counts.get("input_shapes"), skip_unknown=skip
    )
    spec = parse_model_table(km.table, f"{name}.json")
    custom = sum(counts.get("custom_layer_params", {}).values())
    assert spec.params + custom == counts["total"]
    assert spec.trainable_params + custom == counts["trainable"]
