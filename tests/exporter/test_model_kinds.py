"""`gputui exporter --models` serves every model kind `gputui fit` reads: a models TOML's
layer models and transformer tables, a Hugging Face config, a GGUF file. A model it
cannot answer per GPU is refused with one line, never dropped."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from gputui.catalog import load_catalog
from gputui.commands.exporter import _models
from gputui.core.errors import UserError
from gputui.exporter.fitting import unservable
from gputui.exporter.poller import Poller
from gputui.fit import TransformerSpec, load_any
from tests.fleet import write_scenario

from .test_metrics import samples, scrape_text, sim

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples" / "models.toml"


def _served(tmp_path: Path, models: tuple[object, ...]) -> dict[str, set[str]]:
    """model name -> the GPUs it has a gputui_fit_max_batch series for."""
    poller = Poller(
        sim(write_scenario(tmp_path, "node-a")),
        interval=1.0,
        catalog=load_catalog(),
        models=models,  # type: ignore[arg-type]
    )
    poller.poll_once()
    out: dict[str, set[str]] = {}
    for labels, value in samples(scrape_text(poller))["gputui_fit_max_batch"]:
        assert value >= 0
        out.setdefault(labels["model"], set()).add(labels["gpu"])
    return out


def test_a_models_file_serves_its_transformers_too(tmp_path: Path) -> None:
    models = _models(EXAMPLES)
    names = {m.name for m in models}
    transformers = {m.name for m in models if isinstance(m, TransformerSpec)}
    assert {"gpt2-serve", "mnist-cnn"} <= names and "gpt2-serve" in transformers
    served = _served(tmp_path, models)
    assert served["gpt2-serve"] == served["mnist-cnn"] == {"0", "1"}


@pytest.mark.parametrize(
    "path",
    [REPO / "examples" / "llm" / "gpt2.json", REPO / "tests/fixtures/gguf/tiny-llama-q8_0.gguf"],
)
def test_a_transformer_file_is_served(tmp_path: Path, path: Path) -> None:
    (model,) = _models(path)
    assert _served(tmp_path, (model,))[model.name] == {"0", "1"}


def test_a_model_over_several_gpus_is_refused_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (spec,) = load_any(REPO / "examples" / "llm" / "gpt2.json")
    assert isinstance(spec, TransformerSpec) and unservable(spec) is None
    wide = replace(spec, workload=replace(spec.workload, gpus=2, parallel="tp", tp=2))
    why = unservable(wide)
    assert why is not None and "2 GPUs" in why and "\n" not in why
    monkeypatch.setattr("gputui.fit.load_any", lambda path: (wide,))
    with pytest.raises(UserError, match="--models .*gpt2.json: model 'gpt2': its workload spans 2"):
        _models(REPO / "examples" / "llm" / "gpt2.json")
