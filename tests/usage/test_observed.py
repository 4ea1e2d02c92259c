"""The observed-peaks store: bounded, its own format only, edited entries dropped."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gputui.usage import observed
from gputui.usage.observed import Comparison, framework_of, history, load, store


def comparison(pid: int, observed_gib: float, card: str = "H100 SXM", **kw: object) -> Comparison:
    base: dict[str, object] = dict(
        framework="pytorch", model="llama", estimate_bytes=10 << 30, start=1.0, at=2.0
    )
    base.update(kw)
    return Comparison(card=card, observed_bytes=int(observed_gib * (1 << 30)), pid=pid, **base)  # type: ignore[arg-type]


def test_history_is_the_median_ratio_per_card(tmp_path: Path) -> None:
    path = tmp_path / "peaks.json"
    assert store([comparison(1, 11), comparison(2, 12), comparison(3, 30)], path) is None
    assert store([comparison(4, 5, card="A100 80GB")], path) is None
    h = history("H100 SXM", load(path))
    assert h is not None and (h.jobs, h.median_ratio) == (3, pytest.approx(1.2))
    assert h.line().startswith("on this machine, jobs like this used 20 % more than predicted")
    a100 = history("A100 80GB", load(path))
    assert a100 is not None and "50 % less than predicted" in a100.line()
    assert history("L4", load(path)) is None


def test_a_repeated_comparison_replaces_itself_and_the_file_is_bounded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "peaks.json"
    store([comparison(1, 11)], path)
    store([comparison(1, 13)], path)
    assert [c.observed_bytes for c in load(path)] == [13 << 30]
    monkeypatch.setattr(observed, "MAX_ENTRIES", 3)
    for pid in range(2, 8):
        store([comparison(pid, 11)], path)
    assert [c.pid for c in load(path)] == [5, 6, 7]


def test_edited_entries_are_dropped_and_a_foreign_file_is_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "peaks.json"
    store([comparison(1, 11)], path)
    doc = json.loads(path.read_text())
    doc["entries"] += [{"card": "\x1b[2J", "pid": 1}, {**doc["entries"][0], "estimate_bytes": -1}]
    path.write_text(json.dumps(doc))
    assert [c.pid for c in load(path)] == [1]
    foreign = tmp_path / "notes.json"
    foreign.write_text('{"entries": []}')
    assert load(foreign) == []
    reason = store([comparison(2, 11)], foreign)
    assert reason is not None and reason.startswith("not kept: ")
    assert foreign.read_text() == '{"entries": []}'


def test_an_empty_data_dir_setting_keeps_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPUTUI_DATA_DIR", "")
    assert observed.data_file() is None and load() == []
    assert store([comparison(1, 11)]) == "not kept ($GPUTUI_DATA_DIR is empty)"


@pytest.mark.parametrize(
    ("command", "framework"),
    [
        ("python3 -m vllm.entrypoints.openai.api_server --model m", "vllm"),
        ("torchrun --nproc-per-node 8 train.py", "pytorch"),
        ("llama-server -m model.gguf", "llama.cpp"),
        ("python train.py", "unknown"),
        (None, "unknown"),
    ],
)
def test_framework_from_the_command_line(command: str | None, framework: str) -> None:
    assert framework_of(command) == framework
