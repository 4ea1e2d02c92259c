"""What nvitop users miss: settings that persist (settings.toml in the user config
directory: interval, sort, filter, "my processes", theme, hidden columns). A broken file is
one warning line and the defaults, never a crash; `--no-config` ignores it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from demo_driving import app_for, ready

from gputui import cli
from gputui.tui.settings import Settings, load, save
from gputui.tui.views.kill import user_name
from gputui.tui.widgets.process_table import ProcessTable


def test_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "gputui" / "settings.toml"
    s = Settings(
        interval=2.0,
        sort="pid",
        reverse=False,
        filter='python "x" \\ y',
        mine=True,
        theme="nord",
        hidden_columns=("time", "type"),
    )
    assert save(path, s) is None
    assert load(path) == (s, None)


def test_missing_file_is_the_defaults_without_a_warning(tmp_path: Path) -> None:
    assert load(tmp_path / "none.toml") == (Settings(), None)


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ('interval = "fast"', "interval"),
        ("interval = 0.01", "interval: 0.01 is out of range (0.1 to 3600)"),
        ('sort = "bogus"', "sort: must be one of"),
        ('hidden_columns = ["pid"]', "hidden_columns"),
        ("colour = 1", "colour: unknown setting"),
        ("interval = ", "invalid TOML"),
        ("[[[[", "invalid TOML"),
    ],
)
def test_a_broken_file_is_one_line_and_the_defaults(tmp_path: Path, text: str, field: str) -> None:
    path = tmp_path / "settings.toml"
    path.write_text(text + "\n")
    settings, warning = load(path)
    assert settings == Settings()
    assert warning is not None and "\n" not in warning
    assert str(path) in warning and field in warning and warning.endswith("using defaults")


def test_binary_garbage_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "settings.toml"
    path.write_bytes(b"\xff\xfe\x00garbage")
    settings, warning = load(path)
    assert settings == Settings() and warning is not None and "\n" not in warning


async def test_saved_settings_apply_and_the_state_at_quit_is_kept() -> None:
    me = user_name(os.getuid())
    app = app_for(
        None, settings=Settings(sort="pid", reverse=False, hidden_columns=("type",), mine=False)
    )
    async with app.run_test(size=(200, 40)) as pilot:
        await ready(pilot, fit=False)
        table = app.dashboard.query_one(ProcessTable)
        assert table.sort_column == "pid" and not table.sort_reverse
        assert "type" not in [c.key for c in table.shown]
        keys = [c.key for c in table.shown]
        after_pid = keys[keys.index("pid") + 1]
        await pilot.press("s")  # pid -> the next column on screen
        await pilot.press("m")
        await pilot.press("q")
    kept = app.exit_settings
    assert kept is not None
    assert kept.sort == after_pid and kept.mine and kept.hidden_columns == ("type",)
    assert kept.interval == app.interval and me


def test_no_config_is_an_option(capsys: pytest.CaptureFixture[str]) -> None:
    # No terminal here: the dashboard refuses to start, but --no-config itself is accepted.
    assert cli.main(["--demo", "--no-config"]) == 2
    assert "needs a terminal" in capsys.readouterr().err
