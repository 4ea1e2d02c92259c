"""A validated catalog kept as plain JSON, so loading it again needs neither TOML nor pydantic.

Validation (pydantic, `gputui.catalog.validate`) is what the dashboard would
otherwise pay ~11 MiB of resident memory for, every run, to read the same 130
cards. After a catalog directory has been validated once, its cards and
architectures are written here as JSON; later loads read that file when its key
still matches.

The key is a SHA-256 of the content of every file the loader reads
(architectures.toml and cards/*.toml, with their names) and of the source of the
code that validates them (models, validate, loader): editing a card, adding a
file or changing a check makes the key differ, and the next load validates
anew. A cache that cannot be read, parsed or turned back into the classes is a
miss, never an error; one that cannot be written is skipped: it is only ever a
shortcut. One file per catalog directory (named by a hash of its path), replaced
atomically, so a directory's edits never pile up files.

Where: `$GPUTUI_CACHE_DIR` when set (empty: no cache at all; the tests point it
at a temporary folder), else the user's cache directory (platformdirs:
~/.cache/gputui on Linux).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from gputui.catalog.catalog import Catalog
from gputui.catalog.models import Architecture, Card

ENV = "GPUTUI_CACHE_DIR"
# Bumped when the file's layout changes (the key changes with the code anyway).
FORMAT = 1
_CODE = ("models.py", "validate.py", "loader.py", "cache.py")


def cache_dir() -> Path | None:
    """Where cache files go; None when caching is switched off (`GPUTUI_CACHE_DIR=`)."""
    configured = os.environ.get(ENV)
    if configured is not None:
        return Path(configured) if configured else None
    import platformdirs

    return Path(platformdirs.user_cache_dir("gputui"))


def content_key(files: Iterable[tuple[str, Path]]) -> str | None:
    """SHA-256 of the named files and of the validating code; None when one cannot be read."""
    digest = hashlib.sha256(f"gputui catalog cache {FORMAT}\0".encode())
    code_dir = Path(__file__).parent
    try:
        for name in _CODE:
            digest.update(name.encode() + b"\0" + (code_dir / name).read_bytes() + b"\0")
        for name, path in files:
            digest.update(name.encode() + b"\0" + path.read_bytes() + b"\0")
    except OSError:
        return None
    return digest.hexdigest()


def _file_for(directory: Path, root: Path) -> Path:
    tag = hashlib.sha256(str(directory).encode()).hexdigest()[:16]
    return root / f"catalog-{tag}.json"


def read(directory: Path, key: str) -> Catalog | None:
    """The catalog cached for `directory` under `key`, or None (absent, stale or unreadable)."""
    root = cache_dir()
    if root is None:
        return None
    try:
        with open(_file_for(directory, root), encoding="utf-8") as handle:
            data = json.load(handle)
        if data.get("format") != FORMAT or data.get("key") != key:
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


def write(directory: Path, key: str, catalog: Catalog) -> None:
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
