"""core/userfile: the one way gputui replaces or removes a file in a user's folders."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from gputui.core.userfile import WriteRefused, read_own, remove_unchanged, replace_file


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


def test_a_new_file_gets_the_mode_asked_for_whatever_the_umask(tmp_path: Path) -> None:
    saved = os.umask(0o077)
    try:
        written = replace_file(tmp_path / "new.toml", b"a = 1\n", new_mode=0o640)
    finally:
        os.umask(saved)
    assert written == tmp_path / "new.toml"
    assert written.read_bytes() == b"a = 1\n"
    assert stat.S_IMODE(written.stat().st_mode) == 0o640
    assert _leftovers(tmp_path) == []


def test_an_existing_file_keeps_its_mode(tmp_path: Path) -> None:
    path = tmp_path / "settings.toml"
    path.write_bytes(b"old\n")
    path.chmod(0o644)
    replace_file(path, b"new\n")
    assert path.read_bytes() == b"new\n" and stat.S_IMODE(path.stat().st_mode) == 0o644


def test_a_symlink_is_written_through_and_stays_a_link(tmp_path: Path) -> None:
    """What dotfile managers make: ~/.config/gputui/settings.toml -> ~/dotfiles/gputui.toml."""
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    target = dotfiles / "gputui.toml"
    target.write_bytes(b"old\n")
    target.chmod(0o664)
    config = tmp_path / "config"
    config.mkdir()
    link = config / "settings.toml"
    link.symlink_to(Path("..") / "dotfiles" / "gputui.toml")  # relative, as stow makes them
    assert replace_file(link, b"new\n") == target.resolve()
    assert link.is_symlink() and os.readlink(link) == str(Path("..") / "dotfiles" / "gputui.toml")
    assert target.read_bytes() == b"new\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o664
    assert _leftovers(config) == [] and _leftovers(dotfiles) == []


def test_a_chain_of_links_is_followed_to_the_file(tmp_path: Path) -> None:
    target = tmp_path / "real.toml"
    target.write_bytes(b"old\n")
    (tmp_path / "b").symlink_to(target)
    (tmp_path / "a").symlink_to(tmp_path / "b")
    replace_file(tmp_path / "a", b"new\n")
    assert (tmp_path / "a").is_symlink() and (tmp_path / "b").is_symlink()
    assert target.read_bytes() == b"new\n"


@pytest.mark.parametrize("kind", ["dangling", "loop", "fifo", "directory", "read-only"])
def test_what_cannot_be_replaced_without_loss_is_refused(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "settings.toml"
    if kind == "dangling":
        path.symlink_to(tmp_path / "nowhere")
    elif kind == "loop":
        path.symlink_to(tmp_path / "other")
        (tmp_path / "other").symlink_to(path)
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "directory":
        path.mkdir()
    else:
        path.write_bytes(b"mine\n")
        path.chmod(0o444)
    with pytest.raises(WriteRefused):
        replace_file(path, b"new\n")
    assert _leftovers(tmp_path) == []
    if kind == "read-only":
        assert path.read_bytes() == b"mine\n"
    if kind in ("dangling", "loop"):
        assert path.is_symlink() and not (tmp_path / "nowhere").exists()


def test_a_link_is_refused_when_links_are_not_followed(tmp_path: Path) -> None:
    target = tmp_path / "real.json"
    target.write_bytes(b"theirs")
    (tmp_path / "cache.json").symlink_to(target)
    with pytest.raises(WriteRefused):
        replace_file(tmp_path / "cache.json", b"ours", follow_symlinks=False)
    assert (tmp_path / "cache.json").is_symlink() and target.read_bytes() == b"theirs"


def test_a_file_the_caller_does_not_vouch_for_is_left_as_it_is(tmp_path: Path) -> None:
    path = tmp_path / "catalog-1.json"
    path.write_bytes(b"the user's")
    seen: list[bytes] = []

    def vouch(present: bytes) -> bool:
        seen.append(present)
        return present.startswith(b"gputui")

    with pytest.raises(WriteRefused):
        replace_file(path, b"gputui new", may_replace=vouch)
    assert path.read_bytes() == b"the user's" and seen == [b"the user's"]
    path.write_bytes(b"gputui old")
    replace_file(path, b"gputui new", may_replace=vouch)
    assert path.read_bytes() == b"gputui new"
    assert _leftovers(tmp_path) == []


def test_a_folder_that_cannot_be_written_is_an_oserror_and_nothing_changes(
    tmp_path: Path,
) -> None:
    if os.geteuid() == 0:
        pytest.skip("root writes to a read-only folder")
    path = tmp_path / "settings.toml"
    path.write_bytes(b"old\n")
    tmp_path.chmod(0o500)
    try:
        with pytest.raises(OSError):
            replace_file(path, b"new\n")
    finally:
        tmp_path.chmod(0o700)
    assert path.read_bytes() == b"old\n"


def test_read_own_refuses_links_and_special_files(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"abc")
    found = read_own(path, 10)
    assert found is not None and found[0] == b"abc"
    assert read_own(path, 2) is None  # over the size asked for
    (tmp_path / "link").symlink_to(path)
    assert read_own(tmp_path / "link", 10) is None
    os.mkfifo(tmp_path / "fifo")
    assert read_own(tmp_path / "fifo", 10) is None


def test_remove_unchanged_removes_only_the_file_that_was_read(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"abc")
    found = read_own(path, 10)
    assert found is not None
    path.unlink()
    path.write_bytes(b"someone else's")  # replaced since it was read
    assert not remove_unchanged(path, found[1])
    assert path.read_bytes() == b"someone else's"
    again = read_own(path, 100)
    assert again is not None and remove_unchanged(path, again[1]) and not path.exists()


def test_a_file_that_appears_while_a_new_one_is_written_is_not_clobbered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import gputui.core.userfile as userfile

    path = tmp_path / "settings.toml"
    real_fsync = os.fsync

    def someone_else_writes(fd: int) -> None:
        real_fsync(fd)
        if not path.exists():
            path.write_bytes(b"written meanwhile\n")

    monkeypatch.setattr(userfile.os, "fsync", someone_else_writes)
    with pytest.raises(WriteRefused):
        replace_file(path, b"new\n")
    assert path.read_bytes() == b"written meanwhile\n"
    assert _leftovers(tmp_path) == []


def test_a_file_swapped_while_it_is_written_is_not_clobbered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import gputui.core.userfile as userfile

    path = tmp_path / "settings.toml"
    path.write_bytes(b"old\n")
    real_fsync = os.fsync

    def swapped(fd: int) -> None:
        real_fsync(fd)
        if path.read_bytes() == b"old\n":  # as an editor saves: a new file renamed over it
            edited = tmp_path / "editor-swap"
            edited.write_bytes(b"an editor saved this meanwhile\n")
            os.replace(edited, path)

    monkeypatch.setattr(userfile.os, "fsync", swapped)
    with pytest.raises(WriteRefused):
        replace_file(path, b"new\n")
    assert path.read_bytes() == b"an editor saved this meanwhile\n"
