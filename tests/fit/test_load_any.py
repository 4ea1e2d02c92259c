"""fit/importers/registry.py: load_any reads every model file kind, a safetensors file
included (as its model folder), and refuses what it cannot read in one line."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from gputui.core.errors import UserError
from gputui.fit import ModelSpec, TransformerSpec, detect_kind, load_any
from gputui.fit.importers.safetensors import write_header_only

REPO = Path(__file__).resolve().parents[2]
GPT2 = REPO / "examples" / "llm" / "gpt2.json"


def test_every_kind_gives_descriptions() -> None:
    models = load_any(REPO / "examples" / "models.toml")
    assert any(isinstance(m, ModelSpec) for m in models)
    assert any(isinstance(m, TransformerSpec) for m in models)
    (keras,) = load_any(REPO / "tests" / "fixtures" / "keras" / "mnist_convnet.keras")
    assert isinstance(keras, ModelSpec)
    (gguf,) = load_any(REPO / "tests" / "fixtures" / "gguf" / "tiny-llama-q8_0.gguf")
    assert isinstance(gguf, TransformerSpec) and gguf.workload.prefill_chunk == 512
    (hf,) = load_any(GPT2)
    assert isinstance(hf, TransformerSpec) and hf.workload.mode == "generate"


def test_a_safetensors_file_reads_as_its_model_folder(tmp_path: Path) -> None:
    shutil.copy(GPT2, tmp_path / "config.json")
    weights = tmp_path / "model.safetensors"
    write_header_only(weights, {"wte.weight": ("F16", (64, 8))})
    assert detect_kind(weights) == "safetensors"
    (from_file,) = load_any(weights)
    (from_folder,) = load_any(tmp_path)
    assert isinstance(from_file, TransformerSpec) and from_file == from_folder


def test_a_lone_safetensors_file_is_refused_in_one_line(tmp_path: Path) -> None:
    weights = tmp_path / "model.safetensors"
    write_header_only(weights, {"w": ("F32", (4, 4))})
    with pytest.raises(UserError, match="holds weights only; give its model folder") as err:
        load_any(weights)
    assert "\n" not in str(err.value)


def test_keras_options_on_another_kind_are_refused_not_ignored() -> None:
    with pytest.raises(UserError, match="apply to a Keras file"):
        load_any(GPT2, skip_unknown=True)
