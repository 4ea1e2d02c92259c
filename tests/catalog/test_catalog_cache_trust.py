"""The catalog cache is believed only when nobody else could have written it.

What the cache says is what `catalog show` and `fit` report. A file edited by
hand is a miss; a file forged in the right format (its CRC recomputed) is
refused when it or its folder could have been written by someone else: another
owner, group or others writable, a symlink. A miss is validated anew, never an
error.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import stat
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from gputui.catalog import cache, load_catalog, loader
from gputui.cli import main

from .conftest import GOOD_CARD

MakeCatalog = Callable[..., Path]
OTHER_UID = 54321  # nobody on this machine; chown to it needs root


@pytest.fixture
def cache_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    root = tmp_path / "cache"
    monkeypatch.setenv(cache.ENV, str(root))
    loader._load_cached.cache_clear()
    yield root
    loader._load_cached.cache_clear()


def _memory_of(card: str, directory: Path) -> float:
    loader._load_cached.cache_clear()  # as a new process: only the disk cache is left
    return next(c.memory_gib for c in load_catalog(directory).cards if c.name == card)


def _set_memory(text: str, card: str, gib: str) -> str:
    """`text` (a cache file) with `card`'s memory_gib written as `gib`."""
    at = text.index(f'"name":"{card}"')
    field = re.compile(r'"memory_gib":\s*[0-9.]+')
    found = field.search(text, at)
    assert found is not None
    return text[: found.start()] + f'"memory_gib":{gib}' + text[found.end() :]


def _stored_memory(path: Path, card: str) -> str:
    text = path.read_text(encoding="utf-8")
    found = re.compile(r'"memory_gib":\s*([0-9.]+)').search(text, text.index(f'"name":"{card}"'))
    assert found is not None
    return found.group(1)


def _forge(path: Path, card: str, gib: str) -> None:
    """Edit `card`'s memory in the cache file as a forger who knows the format would: the
    payload's CRC-32 recomputed when the file carries one."""
    text = _set_memory(path.read_text(encoding="utf-8"), card, gib)
    sealed = re.match(r'\{"crc32":"[0-9a-f]{8}","payload":', text)
    if sealed:
        body = text[sealed.end() : -1].encode("utf-8")
        text = f'{{"crc32":"{zlib.crc32(body):08x}","payload":' + body.decode("utf-8") + "}"
    path.write_text(text, encoding="utf-8")


def _cached_file(root: Path) -> Path:
    (kept,) = root.glob("catalog-*.json")
    return kept


def _needs_root() -> None:
    if os.geteuid() != 0:
        pytest.skip("chown to another user needs root")


@pytest.mark.parametrize("umask", [0o000, 0o022, 0o077], ids=oct)
def test_the_folder_is_created_0700_and_the_file_0600_whatever_the_umask(
    cache_root: Path, scratch_catalog: MakeCatalog, umask: int
) -> None:
    saved = os.umask(umask)
    try:
        load_catalog(scratch_catalog(GOOD_CARD))
    finally:
        os.umask(saved)
    assert stat.S_IMODE(cache_root.stat().st_mode) == 0o700
    assert stat.S_IMODE(_cached_file(cache_root).stat().st_mode) == 0o600


def test_catalog_show_does_not_believe_a_hand_edited_cache(
    cache_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def show() -> str:
        loader._load_cached.cache_clear()
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            assert main(["catalog", "show", "RTX 3090"]) == 0
        return out.getvalue()

    assert re.search(r"Memory \(GiB\)\s+24\n", show())
    kept = _cached_file(cache_root)
    kept.write_text(
        _set_memory(kept.read_text(encoding="utf-8"), "GeForce RTX 3090", "4096.0"),
        encoding="utf-8",
    )
    shown = show()
    assert re.search(r"Memory \(GiB\)\s+24\n", shown), shown
    assert "4096" not in shown
    # the miss was validated anew and the file replaced: right again
    assert _stored_memory(_cached_file(cache_root), "GeForce RTX 3090") == "24.0"


def test_a_forged_file_of_this_user_in_a_safe_folder_is_what_the_crc_cannot_stop(
    cache_root: Path, scratch_catalog: MakeCatalog
) -> None:
    """The limit, stated: this user can write the cache, as they can write the catalog."""
    root = scratch_catalog(GOOD_CARD)
    assert _memory_of("Test Card", root) == 24
    _forge(_cached_file(cache_root), "Test Card", "4096.0")
    assert _memory_of("Test Card", root) == 4096


def test_a_file_of_another_owner_is_refused(cache_root: Path, scratch_catalog: MakeCatalog) -> None:
    _needs_root()
    root = scratch_catalog(GOOD_CARD)
    assert _memory_of("Test Card", root) == 24
    kept = _cached_file(cache_root)
    _forge(kept, "Test Card", "4096.0")
    os.chown(kept, OTHER_UID, OTHER_UID)
    assert _memory_of("Test Card", root) == 24
    assert kept.stat().st_uid == os.geteuid()  # replaced by this user's own, rebuilt
    assert _memory_of("Test Card", root) == 24


@pytest.mark.parametrize("mode", [0o666, 0o620, 0o602], ids=oct)
def test_a_file_writable_by_group_or_others_is_refused(
    cache_root: Path, scratch_catalog: MakeCatalog, mode: int
) -> None:
    root = scratch_catalog(GOOD_CARD)
    assert _memory_of("Test Card", root) == 24
    kept = _cached_file(cache_root)
    _forge(kept, "Test Card", "4096.0")
    os.chmod(kept, mode)
    assert _memory_of("Test Card", root) == 24
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600  # rebuilt as it should be


def test_a_symlinked_cache_file_is_refused(
    cache_root: Path, scratch_catalog: MakeCatalog, tmp_path: Path
) -> None:
    root = scratch_catalog(GOOD_CARD)
    assert _memory_of("Test Card", root) == 24
    kept = _cached_file(cache_root)
    _forge(kept, "Test Card", "4096.0")
    elsewhere = tmp_path / "planted.json"
    os.replace(kept, elsewhere)
    os.chmod(elsewhere, 0o600)
    kept.symlink_to(elsewhere)
    planted = elsewhere.read_bytes()
    assert _memory_of("Test Card", root) == 24
    # neither followed nor replaced: a link gputui did not make is left as it is
    assert kept.is_symlink() and elsewhere.read_bytes() == planted


def test_a_folder_others_can_write_to_is_not_used_at_all(
    cache_root: Path, scratch_catalog: MakeCatalog
) -> None:
    root = scratch_catalog(GOOD_CARD)
    assert _memory_of("Test Card", root) == 24
    kept = _cached_file(cache_root)
    _forge(kept, "Test Card", "4096.0")  # a file of ours, 0600, but in a folder others write
    os.chmod(cache_root, 0o777)
    assert _memory_of("Test Card", root) == 24
    assert _stored_memory(kept, "Test Card") == "4096.0"  # not written to either


def test_a_folder_of_another_owner_is_not_used_at_all(
    cache_root: Path, scratch_catalog: MakeCatalog
) -> None:
    _needs_root()
    root = scratch_catalog(GOOD_CARD)
    assert _memory_of("Test Card", root) == 24
    kept = _cached_file(cache_root)
    _forge(kept, "Test Card", "4096.0")
    os.chown(cache_root, OTHER_UID, OTHER_UID)
    assert _memory_of("Test Card", root) == 24
    assert _stored_memory(kept, "Test Card") == "4096.0"


def test_the_key_is_verified_not_just_present(
    cache_root: Path, scratch_catalog: MakeCatalog
) -> None:
    """A sealed file whose key is another card text's is a miss (the key binds the records
    to the catalog's source text and to the code that validated them)."""
    root = scratch_catalog(GOOD_CARD)
    assert _memory_of("Test Card", root) == 24
    kept = _cached_file(cache_root)
    text = kept.read_text(encoding="utf-8").replace("memory_gib = 24", "memory_gib = 4096")
    kept.write_text(text, encoding="utf-8")
    _forge(kept, "Test Card", "4096.0")  # records and key agree with each other, not the files
    assert _memory_of("Test Card", root) == 24
