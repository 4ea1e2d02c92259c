"""The validated catalog kept as JSON: read back without pydantic, and only while it is current."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from gputui.catalog import Catalog, cache, load_catalog, loader
from gputui.catalog import validate as validate_module
from gputui.core.errors import UserError
from gputui.core.resources import catalog_dir

from .conftest import GOOD_CARD

MakeCatalog = Callable[..., Path]


@pytest.fixture
def cache_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """An empty cache folder of this test's own, and no catalog remembered in memory."""
    root = tmp_path / "cache"
    monkeypatch.setenv(cache.ENV, str(root))
    loader._load_cached.cache_clear()
    yield root
    loader._load_cached.cache_clear()


def _fresh_load(directory: Path) -> Catalog:
    loader._load_cached.cache_clear()  # as a new process would: only the disk cache is left
    return load_catalog(directory)


def _no_validation(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object) -> None:
        raise AssertionError("the catalog was validated again")

    monkeypatch.setattr(validate_module, "validate", refuse)


def test_a_second_load_reads_the_cache_and_equals_the_validated_catalog(
    cache_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    validated = load_catalog()
    assert len(list(cache_root.glob("catalog-*.json"))) == 1
    _no_validation(monkeypatch)
    cached = _fresh_load(catalog_dir())
    assert cached is not validated
    assert cached.cards == validated.cards
    assert cached.architectures == validated.architectures
    assert [type(c.memory_gib) for c in cached.cards] == [float] * len(validated.cards)


@pytest.mark.slow
def test_the_dashboard_path_loads_a_cached_catalog_without_pydantic(cache_root: Path) -> None:
    load_catalog()  # validates and writes the cache
    code = (
        "import sys\n"
        "from gputui.catalog import load_catalog\n"
        "c = load_catalog()\n"
        "print(len(c.cards), sorted(m for m in sys.modules if m.split('.')[0] in "
        "('pydantic', 'pydantic_core', 'tomllib', 'tomli')))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split(" ", 1)
    assert int(out[0]) == len(load_catalog().cards)
    assert out[1].strip() == "[]"


def test_an_edited_card_file_is_validated_again(
    cache_root: Path, scratch_catalog: MakeCatalog
) -> None:
    root = scratch_catalog(GOOD_CARD)
    assert load_catalog(root).cards[0].memory_gib == 24
    (root / "cards" / "test.toml").write_text(
        GOOD_CARD.replace("memory_gib = 24", "memory_gib = 48"), encoding="utf-8"
    )
    assert _fresh_load(root).cards[0].memory_gib == 48
    assert len(list(cache_root.glob("catalog-*.json"))) == 1  # replaced, not piled up


def test_a_mistake_after_a_cached_load_is_still_the_one_line_error(
    cache_root: Path, scratch_catalog: MakeCatalog
) -> None:
    root = scratch_catalog(GOOD_CARD)
    load_catalog(root)
    (root / "cards" / "test.toml").write_text(
        GOOD_CARD.replace("memory_gib = 24", "memory_gib = -24"), encoding="utf-8"
    )
    with pytest.raises(UserError) as info:
        _fresh_load(root)
    assert str(info.value).endswith(
        'test.toml:7: card "Test Card": memory_gib: Input should be greater than 0'
    )


def test_a_new_card_file_is_validated_again(cache_root: Path, scratch_catalog: MakeCatalog) -> None:
    root = scratch_catalog(GOOD_CARD)
    load_catalog(root)
    other = GOOD_CARD.replace("Test Card", "Other Card").replace(
        "memory_gib = 24", "memory_gib = 8"
    )
    (root / "cards" / "other.toml").write_text(other, encoding="utf-8")
    assert [c.name for c in _fresh_load(root).cards] == ["Other Card", "Test Card"]


def test_a_refused_catalog_is_never_cached(cache_root: Path, scratch_catalog: MakeCatalog) -> None:
    root = scratch_catalog(GOOD_CARD.replace('segment = "consumer"', 'segment = "gaming"'))
    with pytest.raises(UserError):
        load_catalog(root)
    assert not list(cache_root.glob("catalog-*"))


@pytest.mark.parametrize(
    "damage",
    [
        lambda text: text[: len(text) // 2],  # cut short
        lambda text: text[:60] + "not json",  # the head gputui writes, then garbage
        lambda text: text.replace('"memory_gib"', '"memory_gb"'),  # another layout
        lambda text: text.replace('"cards":[', '"cards":[7,'),
    ],
)
def test_a_damaged_cache_is_a_miss_and_is_rewritten(
    cache_root: Path,
    scratch_catalog: MakeCatalog,
    monkeypatch: pytest.MonkeyPatch,
    damage: Callable[[str], str],
) -> None:
    root = scratch_catalog(GOOD_CARD)
    load_catalog(root)
    (kept,) = cache_root.glob("catalog-*.json")
    kept.write_text(damage(kept.read_text(encoding="utf-8")), encoding="utf-8")
    assert [c.name for c in _fresh_load(root).cards] == ["Test Card"]
    _no_validation(monkeypatch)  # rewritten: the next load is a hit again
    assert [c.name for c in _fresh_load(root).cards] == ["Test Card"]


def test_the_key_follows_content_not_the_clock(
    cache_root: Path, scratch_catalog: MakeCatalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = scratch_catalog(GOOD_CARD)
    load_catalog(root)
    card_file = root / "cards" / "test.toml"
    card_file.write_text(card_file.read_text(encoding="utf-8"), encoding="utf-8")  # new mtime
    _no_validation(monkeypatch)
    assert [c.name for c in _fresh_load(root).cards] == ["Test Card"]


def test_the_key_covers_the_validating_code() -> None:
    arch = catalog_dir() / "architectures.toml"
    key = cache.content_key([("architectures.toml", arch)])
    assert key is not None
    assert key["architectures.toml"] == arch.read_text(encoding="utf-8")
    assert {"gputui/catalog/models.py", "gputui/catalog/validate.py"} <= set(key)
    assert key["gputui/catalog/loader.py"] == Path(loader.__file__).read_text(encoding="utf-8")
    assert cache.content_key([("gone.toml", Path("/nonexistent/gone.toml"))]) is None


def test_a_cache_written_for_another_directory_is_a_miss(
    cache_root: Path, scratch_catalog: MakeCatalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = scratch_catalog(GOOD_CARD)
    load_catalog(root)
    (kept,) = cache_root.glob("catalog-*.json")
    data = cache.decode(kept.read_bytes())
    inputs = [("architectures.toml", root / "architectures.toml")]
    key = cache.content_key([*inputs, ("cards/test.toml", root / "cards" / "test.toml")])
    assert key is not None
    data["directory"] = str(root.resolve())
    kept.write_bytes(cache.encode(data))
    assert cache.read(root.resolve(), key) is not None  # the same file, its own directory: a hit
    data["directory"] = "/somewhere/else"
    kept.write_bytes(cache.encode(data))
    assert cache.read(root.resolve(), key) is None


def test_an_empty_setting_switches_the_cache_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, scratch_catalog: MakeCatalog
) -> None:
    monkeypatch.setenv(cache.ENV, "")
    monkeypatch.chdir(tmp_path)
    loader._load_cached.cache_clear()
    try:
        assert cache.cache_dir() is None
        assert [c.name for c in load_catalog(scratch_catalog(GOOD_CARD)).cards] == ["Test Card"]
    finally:
        loader._load_cached.cache_clear()
    assert not list(tmp_path.rglob("catalog-*.json"))


def test_an_unwritable_cache_folder_only_costs_the_shortcut(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, scratch_catalog: MakeCatalog
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder", encoding="utf-8")
    monkeypatch.setenv(cache.ENV, str(blocker / "cache"))
    loader._load_cached.cache_clear()
    try:
        assert [c.name for c in load_catalog(scratch_catalog(GOOD_CARD)).cards] == ["Test Card"]
    finally:
        loader._load_cached.cache_clear()


def test_the_cache_file_is_plain_json_of_the_records(
    cache_root: Path, scratch_catalog: MakeCatalog
) -> None:
    catalog = load_catalog(scratch_catalog(GOOD_CARD))
    (kept,) = cache_root.glob("catalog-*.json")
    data = cache.decode(kept.read_bytes())
    assert data["format"] == cache.FORMAT
    assert data["cards"] == [c.model_dump(mode="json") for c in catalog.cards]
    assert set(data["architectures"]) == set(catalog.architectures)


_DASHBOARD_LOAD = """
import sys
from pathlib import Path
from gputui.catalog import load_catalog, loader
loader.validate_in_child()
try:
    catalog = load_catalog(Path(sys.argv[1]))
except Exception as exc:
    print("error:", exc)
else:
    print(len(catalog.cards), [c.name for c in catalog.cards][:1])
print("pydantic loaded:", "pydantic" in sys.modules)
"""


def _as_the_dashboard(directory: Path) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", _DASHBOARD_LOAD, str(directory)],
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.splitlines()


@pytest.mark.slow
def test_the_dashboard_validates_a_missed_catalog_in_a_child_and_keeps_pydantic_out(
    cache_root: Path, scratch_catalog: MakeCatalog
) -> None:
    root = scratch_catalog(GOOD_CARD)
    assert _as_the_dashboard(root) == ["1 ['Test Card']", "pydantic loaded: False"]
    assert len(list(cache_root.glob("catalog-*.json"))) == 1  # the child wrote it


@pytest.mark.slow
def test_a_refused_catalog_reads_the_usual_error_when_a_child_validates(
    cache_root: Path, scratch_catalog: MakeCatalog
) -> None:
    root = scratch_catalog(GOOD_CARD.replace("memory_gib = 24", "memory_gib = -24"))
    out = _as_the_dashboard(root)
    assert out[0].startswith("error: ") and out[0].endswith(
        'test.toml:7: card "Test Card": memory_gib: Input should be greater than 0'
    )
    assert not list(cache_root.glob("catalog-*"))


def test_no_child_is_started_without_a_cache_to_hand_over(
    monkeypatch: pytest.MonkeyPatch, scratch_catalog: MakeCatalog
) -> None:
    def no_child(*args: object, **kwargs: object) -> None:
        raise AssertionError("a child process was started")

    monkeypatch.setenv(cache.ENV, "")
    monkeypatch.setattr(subprocess, "run", no_child)
    monkeypatch.setattr(loader, "_IN_CHILD", True)
    loader._load_cached.cache_clear()
    try:
        assert [c.name for c in load_catalog(scratch_catalog(GOOD_CARD)).cards] == ["Test Card"]
    finally:
        loader._load_cached.cache_clear()


@pytest.mark.slow
def test_the_child_never_runs_a_gputui_package_of_the_working_directory(
    cache_root: Path, scratch_catalog: MakeCatalog, tmp_path: Path
) -> None:
    planted = tmp_path / "shared" / "gputui" / "catalog"
    planted.mkdir(parents=True)
    for folder in (planted.parent, planted):
        (folder / "__init__.py").write_text("", encoding="utf-8")
    marker = tmp_path / "ran"
    (planted / "warm.py").write_text(f"open({str(marker)!r}, 'w').close()\n", encoding="utf-8")
    root = scratch_catalog(GOOD_CARD)
    # run as a script, as the gputui command is: its sys.path starts at the script's folder
    script = tmp_path / "bin" / "dashboard.py"
    script.parent.mkdir()
    script.write_text(_DASHBOARD_LOAD, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script), str(root)],
        capture_output=True,
        text=True,
        check=True,
        cwd=planted.parent.parent,
    )
    assert done.stdout.splitlines() == ["1 ['Test Card']", "pydantic loaded: False"]
    assert not marker.exists()


def test_the_cache_keeps_the_most_recent_directories_only(
    cache_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cache, "MAX_FILES", 3)
    loaded = []
    for n in range(5):
        root = tmp_path / f"copy{n}"
        (root / "cards").mkdir(parents=True)
        (root / "architectures.toml").write_bytes(
            (catalog_dir() / "architectures.toml").read_bytes()
        )
        (root / "cards" / "test.toml").write_text(GOOD_CARD, encoding="utf-8")
        load_catalog(root)
        loaded.append(root.resolve())
        # distinct write times, oldest first (a filesystem clock may not tell quick writes apart)
        written = cache._file_for(root.resolve(), cache_root)
        os.utime(written, (1_000_000 + n, 1_000_000 + n))
    kept = sorted(
        cache.decode(p.read_bytes())["directory"] for p in cache_root.glob("catalog-*.json")
    )
    assert kept == sorted(str(r) for r in loaded[-3:])


def _copies(tmp_path: Path, count: int) -> list[Path]:
    """`count` catalog folders of one card each, as `--catalog-dir` copies would be."""
    made = []
    for n in range(count):
        root = tmp_path / f"copy{n}"
        (root / "cards").mkdir(parents=True)
        (root / "architectures.toml").write_bytes(
            (catalog_dir() / "architectures.toml").read_bytes()
        )
        (root / "cards" / "test.toml").write_text(GOOD_CARD, encoding="utf-8")
        made.append(root)
    return made


def test_pruning_never_removes_the_users_own_catalog_files(
    cache_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`GPUTUI_CACHE_DIR` pointed at a folder of the user's own `catalog-*.json`: the name
    proves nothing, so only files gputui wrote (its marker) are counted and pruned."""
    monkeypatch.setattr(cache, "MAX_FILES", 2)
    cache_root.mkdir(mode=0o700)
    theirs = {
        cache_root / "catalog-2019.json": b'{"cards": ["mine"]}\n',
        cache_root / "catalog-0000abcd.json": b'{"crc32":"0000abcd","payload":{"mine":1}}',
        cache_root / "catalog-empty.json": b"",
    }
    for n, (path, data) in enumerate(theirs.items()):
        path.write_bytes(data)
        os.utime(path, (1_000 + n, 1_000 + n))  # older than anything gputui writes
    for n, root in enumerate(_copies(tmp_path, 4)):
        load_catalog(root)
        written = cache._file_for(root.resolve(), cache_root)
        os.utime(written, (1_000_000 + n, 1_000_000 + n))
    for path, data in theirs.items():
        assert path.read_bytes() == data, path
    ours = [p for p in cache_root.glob("catalog-*.json") if p not in theirs]
    assert len(ours) == 2


@pytest.mark.parametrize("data", [b'{"my": "own notes"}\n', b"not json", b""])
def test_a_users_file_with_the_cache_files_name_is_not_overwritten(
    cache_root: Path, tmp_path: Path, data: bytes
) -> None:
    """Without gputui's marker a file is not provably gputui's: a miss, and left as it is."""
    (root,) = _copies(tmp_path, 1)
    cache_root.mkdir(mode=0o700)
    theirs = cache._file_for(root.resolve(), cache_root)
    theirs.write_bytes(data)
    assert [c.name for c in load_catalog(root).cards] == ["Test Card"]
    assert theirs.read_bytes() == data
    assert [c.name for c in _fresh_load(root).cards] == ["Test Card"]  # validated again
