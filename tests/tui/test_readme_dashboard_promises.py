"""What the README tells a new user holds: its key summary names every dashboard key, its
fit examples answer as their comments say, and its set-up lists what a fresh machine needs."""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import pytest

from gputui import cli
from gputui.tui.app import GpuTuiApp
from gputui.tui.screens.dashboard import DashboardScreen
from gputui.tui.widgets.process_table import ProcessTable

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _key_summary() -> str:
    start = README.index("In the dashboard:")
    return README[start : README.index("\n\n", start)]


def test_key_summary_names_every_dashboard_key() -> None:
    summary = _key_summary()
    shown = {"plus,equals_sign": "+", "minus": "-", "slash": "/", "question_mark": "?"}
    keys = [b.key for b in DashboardScreen.BINDINGS if b.key not in ("tab",)]
    keys += [b.key for b in ProcessTable.BINDINGS if b.key in ("t", "space")]
    keys += [b.key for b in GpuTuiApp.BINDINGS if b.key not in ("ctrl+c",)]
    keys += ["enter", "tab", "ctrl+p"]
    for key in keys:
        mark = shown.get(key, key)
        assert f"`{mark}`" in summary or f"`{mark}/" in summary or f"/`{mark}`" in summary, key


def _fit_examples() -> list[tuple[list[str], str]]:
    block = README[README.index("### Examples") :]
    block = block[: block.index("```", block.index("```") + 3)]
    out = []
    for line in block.splitlines():
        command, _, comment = line.partition("  #")
        if command.startswith("gputui fit examples/llm/"):
            out.append((shlex.split(command)[1:], comment))
    return out


@pytest.mark.parametrize(("argv", "comment"), _fit_examples())
def test_llm_fit_examples_answer_as_their_comments_say(
    argv: list[str], comment: str, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    monkeypatch.chdir(ROOT)
    expected = 1 if "does not fit" in comment else 0
    assert cli.main(argv) == expected, capsys.readouterr().out[-400:]


def test_some_llm_example_fits() -> None:
    assert any("does not fit" not in comment for _, comment in _fit_examples())


def test_setup_names_what_a_fresh_machine_needs() -> None:
    setup = README[: README.index("![")]
    assert re.search(r"network\s+access to the Python package index", setup)
    assert "python3-venv" in setup


def test_readme_says_the_fit_line_does_not_fall_back_to_the_examples() -> None:
    assert "Fit: no models configured" in README
