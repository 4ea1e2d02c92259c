"""scripts/accuracy_corpus.py: benchmarks/accuracy.md from the per-source data files."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "accuracy_corpus.py"
HEADER = "kind,family,model,mode,runtime,setting,measured_mib,estimated_mib,source\n"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("accuracy_corpus_script", SCRIPT)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up there
    spec.loader.exec_module(mod)
    return mod


corpus = _load()


def test_the_shipped_corpus_is_what_its_data_gives() -> None:
    assert corpus.main(["--check"]) == 0


def test_every_data_file_reads_and_holds_every_kind_and_hf_models_of_their_own() -> None:
    jobs = corpus.read_all()
    assert {j.kind for j in jobs} == {"transformer", "graph", "torch"}
    # the layer models' other runtime, Keras 3 on torch, is measured too
    assert any(j.runtime.startswith("keras") for j in jobs if j.kind == "graph")
    own = [j for j in jobs if j.file == "transformers_own_models.csv"]
    assert len({j.model.split("@")[0] for j in own}) >= 3


def _write(folder: Path, name: str, rows: str) -> None:
    (folder / name).write_text("# a source\n" + HEADER + rows)


def test_summary_is_nearest_rank_of_absolute_errors_and_the_most_negative_error(
    tmp_path: Path,
) -> None:
    rows = "".join(
        f"graph,cnn,m{i},train,pytorch,batch {i},100,{est},t\n"
        for i, est in enumerate([90, 101, 102, 103, 120])
    )
    _write(tmp_path, "a.csv", rows)
    _write(tmp_path, "b.csv", "transformer,llama,x,generate,hf,b1,200,210,t\n")
    jobs = corpus.read_all(tmp_path)
    s = corpus.Summary.of([j for j in jobs if j.family == "cnn"])
    assert (s.jobs, s.p50, s.p95) == (5, 3.0, 20.0)
    assert s.worst_under is not None and s.worst_under.model == "m0"
    assert corpus.Summary.of([j for j in jobs if j.family == "llama"]).worst_under is None
    text = corpus.render(jobs)
    assert "| graph | cnn | 5 | 3.0 % | 20.0 % | -10.0 % (m0, train, batch 0) |" in text
    assert "| transformer | llama | 1 | 5.0 % | 5.0 % | none under |" in text


@pytest.mark.parametrize(
    ("row", "field"),
    [
        ("graph,cnn,m,train,pytorch,b,zero,1,t\n", "measured_mib"),
        ("graph,cnn,m,train,pytorch,b,100,-1,t\n", "estimated_mib"),
        ("graph,cnn,m,fly,pytorch,b,100,1,t\n", "mode"),
        ("sheep,cnn,m,train,pytorch,b,100,1,t\n", "kind"),
        ("graph,cnn,m,train,pytorch,b,100\n", "fields"),
    ],
)
def test_a_bad_row_names_its_file_row_and_field(tmp_path: Path, row: str, field: str) -> None:
    _write(tmp_path, "bad.csv", row)
    with pytest.raises(
        corpus.CorpusError, match=rf"bad.csv row 1: .*{field}|bad.csv row 1: {field}"
    ):
        corpus.read_all(tmp_path)
