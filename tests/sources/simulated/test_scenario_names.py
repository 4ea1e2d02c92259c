"""`--scenario demo-8gpu.toml` names a shipped scenario from any folder, as the docs list
them; a file of the user's of that name wins, and an unknown name lists the shipped ones."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gputui import cli
from gputui.core.resources import scenarios_dir


@pytest.mark.parametrize("name", ["demo-8gpu.toml", "demo-8gpu"])
def test_shipped_scenario_by_name_from_another_folder(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    monkeypatch.chdir(tmp_path)
    assert cli.main(["snapshot", "--scenario", name]) == 0
    out = capsys.readouterr().out
    assert "SIMULATED (demo-8gpu.toml)" in out
    assert "[7]" in out  # eight GPUs


def test_a_file_of_the_users_wins_over_a_shipped_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    own = (scenarios_dir() / "mig.toml").read_text(encoding="utf-8")
    (tmp_path / "demo-8gpu.toml").write_text(own, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert cli.main(["snapshot", "--scenario", "demo-8gpu.toml"]) == 0
    assert "[7]" not in capsys.readouterr().out


def test_unknown_name_lists_the_shipped_scenarios(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    monkeypatch.chdir(tmp_path)
    assert cli.main(["snapshot", "--scenario", "nope.toml"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "--scenario: nope.toml: no such file" in err and "demo-8gpu.toml" in err


def test_docs_list_every_shipped_scenario_and_count_them() -> None:
    docs = (Path(__file__).resolve().parents[3] / "docs" / "scenarios.md").read_text()
    shipped = sorted(p.name for p in scenarios_dir().glob("*.toml"))
    words = {2: "Two", 3: "Three", 4: "Four", 5: "Five", 6: "Six"}
    assert f"{words[len(shipped)]} ship with gputui" in docs
    for name in shipped:
        assert f"| `{name}`" in docs
    assert (
        "src/gputui/sources/simulated/scenarios/faults.toml" not in docs.split("## Determinism")[0]
    )
