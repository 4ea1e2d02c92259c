"""A validated catalog kept as plain JSON, so loading it again needs neither TOML nor pydantic.

Validation (pydantic, `gputui.catalog.validate`) is what the dashboard would
otherwise pay ~11 MiB of resident memory for, every run, to read the same 130
cards. After a catalog directory has been validated once, its cards and
architectures are written here as JSON; later loads read that file when its key
still matches.

The key is the content itself: the cache holds the text of every file the
loader read (architectures.toml and cards/*.toml, by name) and of the code that
validated them (models, validate, loader, this module), and a load compares them
with the files now, byte for byte: editing a card, adding or removing a file or
changing a check is a miss, and the next load validates anew. No hash to argue
about, and no hashlib either (its OpenSSL library is another 0.6 MiB of resident
memory); the price is a cache file twice the size (~0.3 MB) and reading the
files it compares (~1 ms). A cache that cannot be read, parsed or turned back
into the classes is a miss, never an error; one that cannot be written is
skipped: it is only ever a shortcut. One file per catalog directory (named by
its path), replaced atomically, so a directory's edits never pile up files; and
at most `MAX_FILES` directories' files (`gputui catalog --catalog-dir` on many
copies), the least recently written removed first.

Where: `$GPUTUI_CACHE_DIR` when set (empty: no cache at all; the tests point it
at a temporary folder), else the user's cache directory (platformdirs:
~/.cache/gputui on Linux).
"""

from __future__ import annotations

import contextlib
import json
import os
import zlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from gputui.catalog.catalog import Catalog
from gputui.catalog.models import Architecture, Card

ENV = "GPUTUI_CACHE_DIR"
# Bumped when the file's layout changes (the key changes with the code anyway).
FORMAT = 2
MAX_FILES = 8
_CODE = ("models.py", "validate.py", "loader.py", "cache.py")


def cache_dir() -> Path | None:
    """Where cache files go; None when caching is switched off (`GPUTUI_CACHE_DIR=`)."""
    configured = os.environ.get(ENV)
    if configured is not None:
        return Path(configured) if configured else None
    import platformdirs

    return Path(platformdirs.user_cache_dir("gputui"))


def content_key(files: Iterable[tuple[str, Path]]) -> dict[str, str] | None:
    """The text of the named files and of the validating code; None when one cannot be read."""
    code_dir = Path(__file__).parent
    named = [(f"gputui/catalog/{name}", code_dir / name) for name in _CODE]
    key: dict[str, str] = {}
    try:
        for name, path in (*named, *files):
            key[name] = path.read_bytes().decode("utf-8", "surrogateescape")
    except OSError:
        return None
    return key


def _file_for(directory: Path, root: Path) -> Path:
    # crc32 only names the file; the directory itself is checked inside it.
    tag = f"{zlib.crc32(os.fsencode(directory)):08x}"
    return root / f"catalog-{tag}.json"


def read(directory: Path, key: dict[str, str]) -> Catalog | None:
    """The catalog cached for `directory` under `key`, or None (absent, stale or unreadable)."""
    root = cache_dir()
    if root is None:
        return None
    try:
        with open(_file_for(directory, root), encoding="utf-8") as handle:
            data = json.load(handle)
        if (
            data.get("format") != FORMAT
            or data.get("directory") != str(directory)
            or data.get("key") != key
        ):
            return None
        architectures = {k: _record(Architecture, v) for k, v in data["architectures"].items()}
        cards = tuple(_record(Card, v) for v in data["cards"])
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return None
    return Catalog(cards, architectures, directory)


def _record(cls: type[Architecture] | type[Card], fields: Any) -> Any:
    if not isinstance(fields, dict) or set(fields) != set(cls.model_fields):
        raise ValueError("fields differ")  # written by another layout: a miss
    return cls(**fields)


def write(directory: Path, key: dict[str, str], catalog: Catalog) -> None:
    """Keep `catalog` (validated) for the next load of `directory`; silently skipped on failure."""
    root = cache_dir()
    if root is None:
        return
    data = {
        "format": FORMAT,
        "key": key,
        "directory": str(directory),
        "architectures": {k: a.model_dump() for k, a in catalog.architectures.items()},
        "cards": [c.model_dump() for c in catalog.cards],
    }
    import tempfile

    target = _file_for(directory, root)
    with contextlib.suppress(OSError, ValueError):
        root.mkdir(parents=True, exist_ok=True)
        fd, temporary = tempfile.mkstemp(prefix=target.name, suffix=".tmp", dir=root)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(data, handle, allow_nan=False, separators=(",", ":"))
            os.replace(temporary, target)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise
        _prune(root, target)


def _prune(root: Path, kept: Path) -> None:
    """Remove the least recently written cache files beyond MAX_FILES (never `kept`)."""
    dated = []
    for path in root.glob("catalog-*.json"):
        with contextlib.suppress(OSError):
            dated.append((path.stat().st_mtime_ns, path))
    dated.sort(reverse=True)
    for _, path in dated[MAX_FILES:]:
        if path != kept:
            with contextlib.suppress(OSError):
                path.unlink()
