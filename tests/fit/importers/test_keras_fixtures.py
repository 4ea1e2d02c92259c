"""Every model file real Keras wrote (tests/fixtures/keras) imports, and imports right.

The fixtures and their `count_params()` come from scripts/gen_keras_fixtures.py,
run with Keras 3 (torch backend) and, under tf2/, with tf.keras 2 (tf-keras).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from gputui.core.errors import UserError
from gputui.fit.importers import modelsfile as fit_config
from gputui.fit.importers.keras import KerasModel, load_keras

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "keras"


@dataclass(frozen=True)
class Fixture:
    path: Path
    counts: dict[str, Any]

    @property
    def id(self) -> str:
        return str(self.path.relative_to(FIXTURES))

    @property
    def custom(self) -> bool:
        return "custom_layer_params" in self.counts

    def load(self, **kwargs: Any) -> KerasModel:
        kwargs.setdefault("input_shapes", self.counts.get("input_shapes", {}))
        kwargs.setdefault("skip_unknown", self.custom)
        return load_keras(self.path, **kwargs)


def _fixtures() -> list[Fixture]:
    found = []
    for path in sorted(FIXTURES.rglob("*")):
        if path.suffix not in (".json", ".keras") or path.name.endswith(".counts.json"):
            continue
        counts = path.with_name(path.name.rsplit(".", 1)[0] + ".counts.json")
        found.append(Fixture(path, json.loads(counts.read_text(encoding="utf-8"))))
    return found


FIXTURE_LIST = _fixtures()
BY_ID = {f.id: f for f in FIXTURE_LIST}


def test_the_fixtures_are_there() -> None:
    """The generator's output is committed: both formats, an archive, applications."""
    ids = set(BY_ID)
    for name in ("resnet50.json", "densenet121.json", "seq2seq_lstm.json", "mnist_convnet.keras"):
        assert name in ids
    assert "tf2/resnet50.json" in ids and "tf2/seq2seq_lstm.json" in ids
    assert len(ids) >= 25


def _walk_values(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [v for item in value.values() for v in _walk_values(item)]
    if isinstance(value, list):
        return [v for item in value for v in _walk_values(item)]
    return [value]


def _check_graph(graph: dict[str, Any], blocks: dict[str, Any], where: str) -> None:
    """Names are unique; every input and output names something defined earlier."""
    defined = {spec["name"] for spec in graph["inputs"]}
    assert len(defined) == len(graph["inputs"]), where
    first_calls: set[str] = set()
    for entry in graph["layers"]:
        name = entry["name"]
        assert name not in defined, f"{where}: {name} defined twice"
        for ref in entry["inputs"]:
            assert ref.split(":")[0] in defined, f"{where}: {name} takes {ref} before it exists"
        if "reuse" in entry:
            assert entry["reuse"] in first_calls, f"{where}: {name} reuses {entry['reuse']}"
            assert set(entry) == {"name", "reuse", "inputs"}
        elif "block" in entry:
            assert entry["block"] in blocks, f"{where}: block {entry['block']} missing"
            first_calls.add(name)
        else:
            assert isinstance(entry["type"], str)
            first_calls.add(name)
        defined.add(name)
    for ref in graph["outputs"]:
        assert ref.split(":")[0] in defined, f"{where}: output {ref}"


@pytest.mark.parametrize("fixture", FIXTURE_LIST, ids=lambda f: f.id)
def test_every_fixture_imports(fixture: Fixture) -> None:
    model = fixture.load()
    table = model.table
    assert table["kind"] == "functional"
    assert model.source_format == ("tf.keras2" if fixture.id.startswith("tf2/") else "keras3")
    # TOML has no null: nothing in the table may be None.
    assert None not in _walk_values(table)
    json.dumps(table)  # plain data only
    for spec in table["inputs"]:
        assert all(isinstance(d, int) and d > 0 for d in spec["shape"]), spec
    blocks = table.get("blocks", {})
    _check_graph(table, blocks, fixture.id)
    for name, block in blocks.items():
        _check_graph(block, blocks, f"{fixture.id} block {name}")
    # Exactly one entry per Keras layer call (less the skipped custom layers).
    calls = _keras_calls(json.loads(_config_text(fixture.path)))
    entries = sum(len(g["layers"]) for g in [table, *blocks.values()])
    skipped = len(fixture.counts.get("custom_layer_params", {}))
    assert entries == calls - skipped
    assert bool(model.warnings) == fixture.custom


def _config_text(path: Path) -> str:
    if path.suffix == ".keras":
        import zipfile

        with zipfile.ZipFile(path) as archive:
            return archive.read("config.json").decode()
    return path.read_text(encoding="utf-8")


def _keras_calls(model: dict[str, Any]) -> int:
    """Layer calls in a Keras model JSON, nested models' own layers included."""
    config = model["config"]
    total = 0
    for layer in config["layers"]:
        if layer["class_name"] == "InputLayer":
            continue
        if model["class_name"] == "Sequential":
            total += 1
        else:
            total += len(layer["inbound_nodes"])
        if layer["class_name"] in ("Functional", "Sequential", "Model"):
            total += _keras_calls(layer)
    return total


def test_archive_reads_like_its_json() -> None:
    archive = BY_ID["mnist_convnet.keras"].load()
    plain = BY_ID["mnist_convnet.json"].load()
    assert archive.table == plain.table


@pytest.mark.parametrize("prefix", ["", "tf2/"])
def test_seq2seq_initial_state_follows_the_sequence(prefix: str) -> None:
    table = BY_ID[f"{prefix}seq2seq_lstm.json"].load().table
    assert [s["name"] for s in table["inputs"]] == ["encoder_inputs", "decoder_inputs"]
    assert table["inputs"][0]["shape"] == [40, 71]
    decoder = next(e for e in table["layers"] if e["name"] == "decoder_lstm")
    assert decoder["inputs"] == ["decoder_inputs", "encoder_lstm:1", "encoder_lstm:2"]
    assert decoder["return_state"] is True and decoder["units"] == 256
    assert table["outputs"] == ["decoder_dense"]


@pytest.mark.parametrize("prefix", ["", "tf2/"])
def test_siamese_tower_and_projection_are_shared(prefix: str) -> None:
    table = BY_ID[f"{prefix}siamese_shared.json"].load().table
    layers = {e["name"]: e for e in table["layers"]}
    assert layers["tower"] == {"name": "tower", "block": "tower", "inputs": ["left"]}
    assert layers["tower_call2"] == {"name": "tower_call2", "reuse": "tower", "inputs": ["right"]}
    assert layers["projection_call2"]["inputs"] == ["tower_call2"]
    assert layers["cosine"]["inputs"] == ["projection", "projection_call2"]
    tower = table["blocks"]["tower"]
    assert [e["type"] for e in tower["layers"]] == [
        "Conv2D",
        "MaxPooling2D",
        "Conv2D",
        "GlobalAveragePooling2D",
    ]
    assert tower["inputs"][0]["shape"] == [32, 32, 3]


@pytest.mark.parametrize("prefix", ["", "tf2/"])
def test_frozen_backbone_is_a_frozen_block(prefix: str) -> None:
    table = BY_ID[f"{prefix}frozen_backbone_finetune.json"].load().table
    call = next(e for e in table["layers"] if "block" in e)
    assert call["trainable"] is False
    base = table["blocks"][call["block"]]
    assert all(e.get("trainable") is False for e in base["layers"])
    head = [e for e in table["layers"] if "block" not in e]
    assert all("trainable" not in e for e in head)
    assert head[-1]["type"] == "Dense" and head[-1]["units"] == 1


@pytest.mark.parametrize("prefix", ["", "tf2/"])
def test_vae_has_two_outputs_one_from_the_nested_decoder(prefix: str) -> None:
    table = BY_ID[f"{prefix}vae_two_outputs.json"].load().table
    assert table["outputs"] == ["decoder", "z_log_var"]
    assert table["blocks"]["decoder"]["inputs"][0] == {"name": "z_sampling", "shape": [2]}


@pytest.mark.parametrize("prefix", ["", "tf2/"])
def test_self_attention_names_the_tensor_twice(prefix: str) -> None:
    table = BY_ID[f"{prefix}transformer_builtin.json"].load().table
    mha = next(e for e in table["layers"] if e["type"] == "MultiHeadAttention")
    assert mha["inputs"] == ["token_embedding", "token_embedding"]
    assert (mha["num_heads"], mha["key_dim"], mha["dropout"]) == (2, 32, 0.1)
    assert "query_shape" not in mha  # tf.keras 2 build shapes are not arguments
    assert table["inputs"][0]["dtype"] == "int32"


@pytest.mark.parametrize("prefix", ["", "tf2/"])
def test_mixed_float16_policy_is_the_precision(prefix: str) -> None:
    assert BY_ID[f"{prefix}mixed_float16_cnn.json"].load().precision == "amp_fp16"
    assert BY_ID[f"{prefix}resnet50.json"].load().precision is None


def test_keras_ops_in_the_graph_become_layers() -> None:
    """MobileNetV3's hard sigmoid is relu6(x + 3) * (1/6), recorded as keras.ops."""
    table = BY_ID["mobilenetv3small.json"].load().table
    layers = {e["name"]: e for e in table["layers"]}
    assert layers["add"]["type"] == "Rescaling"
    assert (layers["add"]["scale"], layers["add"]["offset"]) == (1.0, 3.0)
    assert layers["multiply"]["scale"] == pytest.approx(1 / 6)
    assert layers["multiply"]["offset"] == 0.0


def test_variable_dimension_left_open_is_one_error() -> None:
    with pytest.raises(UserError) as info:
        BY_ID["seq2seq_lstm.json"].load(input_shapes={"decoder_inputs": [50, 93]})
    message = str(info.value)
    assert "seq2seq_lstm.json" in message and "\n" not in message
    assert "input 'encoder_inputs' has a variable dimension (shape (None, 71))" in message
    assert "--input-shape encoder_inputs=N,71" in message


def test_custom_layer_is_one_error_naming_class_and_layer() -> None:
    with pytest.raises(UserError) as info:
        BY_ID["text_transformer_custom.json"].load(skip_unknown=False)
    message = str(info.value)
    assert "\n" not in message
    assert "layer 'token_and_position_embedding' (TokenAndPositionEmbedding)" in message
    assert "keras_io>TokenAndPositionEmbedding" in message
    assert "(and 1 more unknown layer)" in message
    assert "--skip-unknown" in message


def test_skip_unknown_keeps_the_rest_and_says_what_it_left_out() -> None:
    model = BY_ID["text_transformer_custom.json"].load(skip_unknown=True)
    table = model.table
    # The embedding turns token ids (200,) into (200, 32): its output stands in as the input.
    assert table["inputs"] == [{"name": "token_and_position_embedding_output", "shape": [200, 32]}]
    assert table["layers"][0]["type"] == "GlobalAveragePooling1D"
    assert table["layers"][0]["inputs"] == ["token_and_position_embedding_output"]
    text = " | ".join(model.warnings)
    assert "TokenAndPositionEmbedding" in text and "TransformerBlock" in text
    assert "treated as identity" in text and "input 'input_layer' feeds only skipped" in text


# --- parameter counts against Keras' count_params() ------------------------------------------

_parse_table = getattr(fit_config, "parse_model_table", None)


def _engine_counts(fixture: Fixture) -> tuple[int, int]:
    assert _parse_table is not None
    model = fixture.load()
    table = {**model.table, "batch_size": 2, "optimizer": "adam", "mode": "train"}
    spec = _parse_table(table, fixture.id)
    return spec.params, spec.trainable_params


def _expected(fixture: Fixture) -> tuple[int, int]:
    skipped = sum(fixture.counts.get("custom_layer_params", {}).values())
    return fixture.counts["total"] - skipped, fixture.counts["trainable"] - skipped


# Fixtures the engine cannot parse yet, with why; strict, so each mark must go once it can.
# (Empty since the engine broadcasts Multiply's squeeze-excite gate, as Keras does.)
ENGINE_GAPS: dict[str, str] = {}


def _count_case(fixture: Fixture) -> Any:
    gap = ENGINE_GAPS.get(fixture.id)
    marks = [pytest.mark.xfail(reason=gap, raises=UserError, strict=True)] if gap else []
    return pytest.param(fixture, id=fixture.id, marks=marks)


@pytest.mark.skipif(
    _parse_table is None, reason="the graph engine (parse_model_table) is not merged"
)
@pytest.mark.parametrize("fixture", [_count_case(f) for f in FIXTURE_LIST])
def test_parameter_counts_equal_keras(fixture: Fixture) -> None:
    assert _engine_counts(fixture) == _expected(fixture)
