"""Paths the user names that the file system cannot answer for (a symlink to itself, a name
longer than the system allows): one line naming the path and why, exit 2, never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from gputui.cli import main
from gputui.core.errors import UserError
from gputui.fit.importers.modelsfile import load_models

LONG = "o" * 5000


def one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def test_a_keras_sidecar_that_links_to_itself(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("loop.json").symlink_to("loop.json")
    Path("models.toml").write_text('[[model]]\nname = "k"\nkeras = "loop.json"\n')
    with pytest.raises(UserError) as err:
        load_models(Path("models.toml"))
    message = str(err.value)
    assert "\n" not in message and "loop.json" in message and "loop" in message.split(":")[-1]


def test_fit_on_a_file_that_links_to_itself(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("loop.json").symlink_to("loop.json")
    rc = main(["fit", "loop.json", "--gpu", "RTX 4090"])
    assert rc == 2 and "loop.json" in one_line(capsys.readouterr().err)


def test_hf_with_a_repo_name_too_long_for_the_file_system(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    rc = main(["fit", "--hf", f"o/{LONG}", "--gpu", "RTX 4090"])
    line = one_line(capsys.readouterr().err)
    assert rc == 2 and "--hf" in line and len(line) < 400


def test_hf_with_a_cache_folder_name_too_long(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / LONG))
    rc = main(["fit", "--hf", "meta-llama/Meta-Llama-3-8B", "--gpu", "RTX 4090"])
    line = one_line(capsys.readouterr().err)
    assert rc == 2 and "name is too long" in line and len(line) < 400


@pytest.mark.parametrize("name", [LONG, f"{LONG}/config.json", "a\x00b"])
def test_fit_on_a_path_the_system_refuses(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["fit", name, "--gpu", "RTX 4090"])
    assert rc == 2 and len(one_line(capsys.readouterr().err)) < 400


def test_an_hf_config_path_too_long_in_a_models_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("models.toml").write_text(
        f'[[model]]\nname = "t"\nkind = "transformer"\nhf_config = "{LONG}"\n'
    )
    with pytest.raises(UserError) as err:
        load_models(Path("models.toml"))
    message = str(err.value)
    assert "\n" not in message and "hf_config" in message and "too long" in message


def test_the_dashboard_scenario_and_models_options(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    loop = tmp_path / "loop.toml"
    loop.symlink_to(loop)
    assert main(["--scenario", str(tmp_path / LONG)]) == 2
    assert "too long" in one_line(capsys.readouterr().err)
    assert main(["--demo", "--models", str(loop)]) == 2
    assert "loop" in one_line(capsys.readouterr().err)
