"""`gputui fit --json`: one document shape for every model kind and mode (schema_version 2).

Real outputs of every input kind (models TOML, its transformer tables, a Keras JSON and
archive, an HF config and folder, a GGUF file), checked and ranked, validate against
the shipped schema (docs/fit-schema.json, generated from gputui.fit.report.schema),
and the same question asked through two inputs gives the same entry.
"""

from __future__ import annotations

import inspect
import json
import shutil
from pathlib import Path
from typing import Any

import pydantic
import pytest

from gputui.cli import main
from gputui.fit.report.schema import FitDocument, json_schema

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = str(ROOT / "examples" / "models.toml")
LLAMA = str(ROOT / "examples" / "llm" / "llama-3-8b.json")
GPT2 = str(ROOT / "examples" / "llm" / "gpt2.json")
GGUF = str(ROOT / "tests" / "fixtures" / "gguf" / "tiny-llama-q8_0.gguf")
KERAS = ROOT / "tests" / "fixtures" / "keras"
CARD = ("--gpu", "RTX 3090")
ENTRY_KEYS = {
    "name", "kind", "model", "workload", "assumptions", "parallel_choice", "speed_assumed",
    "estimates",
    "ranking", "mig_advice",
}  # fmt: skip

CASES: dict[str, tuple[str, ...]] = {
    "models-toml": (EXAMPLES, *CARD),
    "models-toml-all-cards": (EXAMPLES, "--all-cards"),
    "models-toml-cpu": (EXAMPLES, *CARD, "--device", "cpu", "--model", "mnist-cnn"),
    "models-toml-transformers-only": (EXAMPLES, *CARD, "--model", "gpt2-serve"),
    "keras-json": (str(KERAS / "resnet50.json"), *CARD),
    "keras-archive": (str(KERAS / "mnist_convnet.keras"), *CARD),
    "hf-config": (LLAMA, *CARD),
    "hf-config-train-lora": (LLAMA, *CARD, "--mode", "train", "--lora-rank", "16"),
    "hf-config-two-gpus": (LLAMA, *CARD, "--gpus", "2"),
    "hf-config-all-cards": (GPT2, "--all-cards", "--mode", "generate"),
    "gguf": (GGUF, *CARD),
}


def fit_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    code = main(["fit", *argv, "--json"])
    out, err = capsys.readouterr()
    assert code in (0, 1), err
    doc: dict[str, Any] = json.loads(out)
    return doc


# docs/fit-schema.json is written by this pydantic; older ones (the lowest allowed is 2.0)
# write the same schema with fewer redundant hints (no "type" beside a Literal's "const").
GENERATED_BY = (2, 14)


def _contained(small: Any, big: Any, path: str = "") -> None:
    """Every key and value of `small` is in `big` (lists element by element)."""
    if isinstance(small, dict):
        assert isinstance(big, dict), path
        for key, value in small.items():
            assert key in big, f"{path}/{key} is not in the shipped schema"
            _contained(value, big[key], f"{path}/{key}")
    elif isinstance(small, list):
        assert isinstance(big, list) and len(small) == len(big), path
        for i, (a, b) in enumerate(zip(small, big, strict=True)):
            _contained(a, b, f"{path}[{i}]")
    elif path.endswith("/description") and isinstance(small, str) and isinstance(big, str):
        # pydantic 2.0 keeps a class docstring's indentation; later versions dedent it
        assert inspect.cleandoc(small) == inspect.cleandoc(big), path
    else:
        assert small == big, f"{path}: {small!r} != {big!r}"


def test_the_shipped_schema_is_the_generated_one() -> None:
    shipped = json.loads((ROOT / "docs" / "fit-schema.json").read_text(encoding="utf-8"))
    generated = json_schema()
    if tuple(int(p) for p in pydantic.VERSION.split(".")[:2]) >= GENERATED_BY:
        assert shipped == generated, "regenerate: python -m gputui.fit.report.schema"
    else:
        _contained(generated, shipped)


@pytest.mark.parametrize("case", sorted(CASES))
def test_every_kind_validates_against_the_schema(
    capsys: pytest.CaptureFixture[str], case: str
) -> None:
    doc = fit_json(capsys, *CASES[case])
    FitDocument.model_validate(doc)  # extra keys anywhere are refused
    assert doc["schema_version"] == 3 and doc["models"]
    ranked = doc["mode"] == "all-cards"
    for entry in doc["models"]:
        assert set(entry) == ENTRY_KEYS  # one entry shape for both kinds
        assert (entry["ranking"] is not None) == ranked
        assert (entry["estimates"] is None) == ranked
        # one estimate per GPU checked, in the document's GPU order
        assert [e["gpu"] for e in entry["estimates"] or ()] == ([] if ranked else doc["gpus"])
        for e in entry["estimates"] or ():
            assert e["peak_bytes"] == sum(e["breakdown"].values())
            if entry["kind"] == "graph":  # the answer is its chosen precision's row
                (row,) = [r for r in e["precisions"] if r["precision"] == e["precision"]]
                assert {k: e[k] for k in row} == row


def test_the_schema_refuses_the_old_shapes(capsys: pytest.CaptureFixture[str]) -> None:
    """A version 1 document (model and estimates at the top) is not a version 2 one."""
    doc = fit_json(capsys, LLAMA, *CARD)
    (entry,) = doc["models"]
    old = {"schema_version": 1, "kind": "transformer", **entry, "all_fit": doc["all_fit"]}
    with pytest.raises(ValueError):
        FitDocument.model_validate(old)


def test_a_config_file_and_a_models_file_table_give_the_same_entry(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The same model and workload through two inputs: one entry, the same numbers."""
    table = tmp_path / "models.toml"
    shutil.copy(LLAMA, tmp_path / "llama.json")
    table.write_text(
        '[[model]]\nname = "llama-3-8b"\nkind = "transformer"\nhf_config = "llama.json"\n'
        'mode = "train"\nmethod = "lora"\nlora_rank = 16\n'
    )
    (from_table,) = fit_json(capsys, str(table), *CARD)["models"]
    (alone,) = fit_json(capsys, LLAMA, *CARD, "--mode", "train", "--lora-rank", "16")["models"]
    for key in ("name", "kind", "workload", "estimates", "mig_advice", "speed_assumed"):
        assert from_table[key] == alone[key], key
    assert alone["parallel_choice"]["parallel"] == "none"  # asked on one GPU
    assert from_table["parallel_choice"] is None  # a table's workload is not chosen


def test_an_hf_folder_and_no_gpu_left_keep_the_shape(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "gpt2"
    folder.mkdir()
    shutil.copy(GPT2, folder / "config.json")
    doc = fit_json(capsys, str(folder), *CARD)
    FitDocument.model_validate(doc)
    assert doc["models"][0]["kind"] == "transformer" and doc["models"][0]["estimates"]

    from gputui.fit import targets
    from gputui.sources import base as source

    class Lost:
        def poll(self) -> Any:
            from gputui.model.snapshot import DeviceInfo, DeviceSnapshot, Snapshot

            info = DeviceInfo(0, "NVIDIA GeForce RTX 3090", memory_total=24 * 2**30)
            return Snapshot(0.0, "nvml", (DeviceSnapshot(info, None, failed="GPU is lost"),))

        def close(self) -> None:
            pass

    monkeypatch.setattr(source, "open_source", lambda *a, **k: (Lost(), None))
    assert targets.unavailable_devices(Lost().poll())  # the lost GPU is named, not checked
    for argv in ((GPT2,), (EXAMPLES, "--model", "mnist-cnn")):
        assert main(["fit", *argv, "--json"]) == 3
        doc = json.loads(capsys.readouterr().out)
        FitDocument.model_validate(doc)
        (entry,) = doc["models"]
        assert entry["estimates"] == [] and doc["gpus"] == [] and not doc["all_fit"]
        assert [u["index"] for u in doc["unavailable_gpus"]] == [0]
