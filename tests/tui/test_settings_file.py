"""The settings file is the user's: saving edits it in place and never loses what was there.

`save_settings(path, changes)` sets only the changed settings; every other key, value,
comment and blank line stays byte for byte. A file gputui could not read whole is never
written, nor is one that changed into something else. The real dashboard in a pty shows
the whole path: a file with one bad value, or a symlinked one, after a session.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from pty_driving import ALT_SCREEN_OFF, read_until, running, wait_exit

from gputui.core.tomlsafe import parse_toml
from gputui.tui.settings import NEW_FILE_HEADER, load, save_settings

HAND_WRITTEN = """\
# my gputui settings, kept in my dotfiles
interval = 2  # seconds; slow laptop

filter = "python"   # only my training jobs
hidden_columns = ["time", "type"]
colour = "a setting a newer gputui knows"

[notes]
why = "the [notes] table is mine"
"""


def test_only_the_changed_setting_changes_and_every_comment_stays(tmp_path: Path) -> None:
    path = tmp_path / "settings.toml"
    path.write_text(HAND_WRITTEN)
    assert save_settings(path, {"sort": "pid", "interval": 5.0}) is None
    text = path.read_text()
    assert text == HAND_WRITTEN.replace("interval = 2 ", "interval = 5.0 ").replace(
        'colour = "a setting a newer gputui knows"\n',
        'colour = "a setting a newer gputui knows"\nsort = "pid"\n',
    )


def test_nothing_changed_is_nothing_written(tmp_path: Path) -> None:
    path = tmp_path / "settings.toml"
    path.write_text(HAND_WRITTEN)
    os.utime(path, (1_000_000, 1_000_000))
    assert save_settings(path, {}) is None
    assert save_settings(path, {"filter": "python"}) is None  # the value it already has
    assert path.stat().st_mtime == 1_000_000 and path.read_text() == HAND_WRITTEN


def test_removing_a_setting_an_empty_file_lacks_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "settings.toml"
    path.write_bytes(b"")
    os.utime(path, (1_000_000, 1_000_000))
    assert save_settings(path, {"mine": None}) is None
    assert path.stat().st_mtime == 1_000_000


def test_none_removes_a_setting_and_a_new_file_starts_with_a_header(tmp_path: Path) -> None:
    path = tmp_path / "gputui" / "settings.toml"
    assert save_settings(path, {"hidden_columns": ("time",), "mine": True}) is None
    assert path.read_text().startswith(NEW_FILE_HEADER)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert parse_toml(path.read_text(), "x") == {"hidden_columns": ["time"], "mine": True}
    assert save_settings(path, {"mine": None}) is None
    assert parse_toml(path.read_text(), "x") == {"hidden_columns": ["time"]}


def test_a_bad_value_is_replaced_only_by_a_setting_the_user_changed(tmp_path: Path) -> None:
    path = tmp_path / "settings.toml"
    path.write_text("interval = 0.05  # too fast, warned about\nsort = 'bogus'\n")
    assert save_settings(path, {"sort": "pid"}) is None
    # (tomlkit 0.15.3 on keeps even the quotes the user chose)
    kept = "interval = 0.05  # too fast, warned about\nsort = {q}pid{q}\n"
    assert path.read_text() in (kept.format(q="'"), kept.format(q='"'))


@pytest.mark.parametrize(
    "raw",
    [
        b"interval = \n# half a file\n",
        b"\xff\xfe not UTF-8\n",
        b"a = " + b"[" * 10 + b"]" * 10 + b"\n",
        b"filter = 'x'\n" + b"#" * (70 * 1024),
    ],
    ids=["not TOML", "not UTF-8", "too deep", "too big"],
)
def test_a_file_that_cannot_be_read_whole_is_never_written(tmp_path: Path, raw: bytes) -> None:
    path = tmp_path / "settings.toml"
    path.write_bytes(raw)
    warning = save_settings(path, {"sort": "pid"})
    assert warning is not None and "\n" not in warning and "not saved" in warning
    assert path.read_bytes() == raw


def test_a_setting_the_user_made_a_table_is_left_as_written(tmp_path: Path) -> None:
    path = tmp_path / "settings.toml"
    path.write_text("sort.by = 'pid'\nfilter = 'x'\n")
    assert save_settings(path, {"sort": "gpu", "filter": "y"}) is None
    assert path.read_text() in (
        "sort.by = 'pid'\nfilter = 'y'\n",
        "sort.by = 'pid'\nfilter = \"y\"\n",
    )


def test_a_value_the_settings_would_refuse_is_not_written(tmp_path: Path) -> None:
    path = tmp_path / "settings.toml"
    path.write_text(HAND_WRITTEN)
    warning = save_settings(path, {"interval": 0.01})
    assert warning is not None and "interval" in warning
    assert path.read_text() == HAND_WRITTEN


def test_a_read_only_settings_file_is_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "settings.toml"
    path.write_text(HAND_WRITTEN)
    path.chmod(0o444)
    warning = save_settings(path, {"sort": "pid"})
    assert warning is not None and "read-only" in warning
    assert path.read_text() == HAND_WRITTEN


def test_a_symlinked_settings_file_is_written_through_the_link(tmp_path: Path) -> None:
    target = tmp_path / "dotfiles" / "gputui.toml"
    target.parent.mkdir()
    target.write_text(HAND_WRITTEN)
    target.chmod(0o644)
    link = tmp_path / "config" / "gputui" / "settings.toml"
    link.parent.mkdir(parents=True)
    link.symlink_to(target)
    assert save_settings(link, {"sort": "pid"}) is None
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert 'sort = "pid"' in target.read_text() and "# seconds; slow laptop" in target.read_text()
    assert stat.S_IMODE(target.stat().st_mode) == 0o644
    assert load(link).settings.sort == "pid"


# --- the real dashboard, quit after a session ------------------------------------------------


def _session(config: Path, keys: bytes, tmp_path: Path) -> str:
    """`gputui --demo` with XDG_CONFIG_HOME=config: press `keys`, then q; its stderr."""
    log = tmp_path / "stderr.log"
    env = {"XDG_CONFIG_HOME": str(config), "HOME": str(tmp_path)}
    with running(["--demo"], stderr_to=str(log), env=env) as (pid, fd):
        assert b"UTIL" in read_until(fd, b"UTIL", 30), "no frame drawn"
        for key in keys:
            os.write(fd, bytes([key]))
            read_until(fd, b"\x00never", 0.3)
        os.write(fd, b"q")
        read_until(fd, ALT_SCREEN_OFF, 10)
        status = wait_exit(pid, 10)
        assert status is not None and os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    return log.read_text(errors="replace")


@pytest.mark.slow
@pytest.mark.parametrize(
    "first_line",
    ["interval = 0.05  # too fast: warned about at start", "interval = [not toml"],
    ids=["bad value", "not TOML"],
)
def test_a_session_leaves_a_file_it_warned_about_byte_for_byte(
    tmp_path: Path, first_line: str
) -> None:
    """The file was overwritten with the defaults at quit: comments, filter and hidden
    columns gone."""
    path = tmp_path / "config" / "gputui" / "settings.toml"
    path.parent.mkdir(parents=True)
    original = HAND_WRITTEN.replace("interval = 2  # seconds; slow laptop", first_line).encode()
    path.write_bytes(original)
    err = _session(tmp_path / "config", b"", tmp_path)
    assert "warning" in err and str(path) in err
    assert path.read_bytes() == original


@pytest.mark.slow
def test_a_session_writes_a_symlinked_file_through_the_link(tmp_path: Path) -> None:
    """A dotfile manager's link was replaced by a regular 0600 file."""
    target = tmp_path / "dotfiles" / "gputui.toml"
    target.parent.mkdir()
    target.write_text(HAND_WRITTEN)
    target.chmod(0o644)
    link = tmp_path / "config" / "gputui" / "settings.toml"
    link.parent.mkdir(parents=True)
    link.symlink_to(target)
    _session(tmp_path / "config", b"s", tmp_path)  # s: the next sort column
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert stat.S_IMODE(target.stat().st_mode) == 0o644
    text = target.read_text()
    assert "sort = " in text
    for line in HAND_WRITTEN.splitlines():
        assert line in text
