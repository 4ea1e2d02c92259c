"""The Fit screen and `gputui fit --json` agree: for every model file the project ships or
tests that the screen can open, each model's peak, verdict and largest batch on the same
GPU are the same numbers in both (one importer registry, one workload default, one entry).
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

import pytest

from gputui.cli import main
from gputui.core.errors import UserError
from gputui.fit import load_any
from gputui.tui.views.fit_pass import estimate_pass
from tests.tui.conftest import make_snapshot

REPO = Path(__file__).resolve().parents[2]
# make_device(0): an RTX 3090 with 24 GiB, the catalog card `--gpu` names
CARD = "RTX 3090"


def _model_files() -> list[Path]:
    found = [REPO / "examples" / "models.toml", *sorted((REPO / "examples" / "llm").glob("*.json"))]
    fixtures = REPO / "tests" / "fixtures"
    found += sorted(
        p for p in fixtures.rglob("*") if p.is_file() and p.suffix in (".json", ".keras", ".gguf")
    )
    return found


def _opens(path: Path) -> bool:
    """Whether the Fit screen can open `path` (what its pass reads it with)."""
    try:
        load_any(path)
    except UserError:
        return False
    return True


OPENABLE = [p for p in _model_files() if _opens(p)]


def _cli(path: Path) -> dict[str, tuple[int, str, int | None]]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = main(["fit", str(path), "--gpu", CARD, "--json"])
    assert code in (0, 1), path
    answers = {}
    for entry in json.loads(out.getvalue())["models"]:
        estimates = entry["estimates"]
        if entry["kind"] == "graph":  # one per precision: the row shows the recommended one
            (e,) = [x for x in estimates if x["precision"] == x["recommended_precision"]]
        else:
            (e,) = estimates
        answers[entry["name"]] = (e["peak_bytes"], e["verdict"], e["max_batch_size"])
    return answers


def _screen(path: Path) -> dict[str, tuple[int, str, int | None]]:
    result = estimate_pass(path, make_snapshot(1), None, rank=False, budget_s=1e9)
    assert result.error is None and result.stopped is None, result.error
    answers: dict[str, Any] = {}
    for check in result.checks:
        e = check.chosen
        answers[check.model.name] = (e.peak_bytes, e.verdict, e.max_batch_size)
    return answers


def test_the_screen_opens_every_kind_of_model_file() -> None:
    kinds = {p.suffix for p in OPENABLE} | {"toml" for p in OPENABLE if p.suffix == ".toml"}
    assert {".toml", ".json", ".keras", ".gguf"} <= kinds
    assert len(OPENABLE) >= 50  # the shipped configs and the Keras fixtures


@pytest.mark.parametrize("path", OPENABLE, ids=lambda p: str(p.relative_to(REPO)))
def test_cli_json_and_fit_screen_agree(path: Path) -> None:
    cli, screen = _cli(path), _screen(path)
    assert cli and screen.keys() == cli.keys()
    for name, answer in screen.items():
        assert answer == cli[name], f"{path.name}: {name}: screen {answer} != CLI {cli[name]}"


def test_a_gguf_file_is_described_as_llama_cpp_runs_it() -> None:
    from gputui.fit import TransformerSpec, transformer_workload_line

    (spec,) = load_any(REPO / "tests" / "fixtures" / "gguf" / "tiny-llama-q8_0.gguf")
    assert isinstance(spec, TransformerSpec)
    line = transformer_workload_line(spec.workload, spec.model)
    assert "llama.cpp attention, prompt in chunks of 512 tokens" in line
    assert "sdpa" not in line
