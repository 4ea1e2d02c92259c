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

Trust: what the cache says is what `catalog show` and `fit` report, so it is
believed only when nobody else could have written it. The folder is created
0700 and each file 0600 (set explicitly, whatever the umask); a folder not
owned by this user or writable by group or others is not used at all, and a
file that is a symlink, not a regular file, not owned by this user, writable by
group or others, or over `MAX_BYTES` is a miss (then validated anew). A file
is replaced or pruned only when gputui can prove it wrote it
(`_written_by_gputui`: the head of the layout below): a user's own
`catalog-*.json` in a folder `GPUTUI_CACHE_DIR` names is never touched, and a
cache that cannot be written for that reason is simply not kept. The records
are stored with the CRC-32 of their exact bytes,
`{"crc32": "...", "payload": {...}}` (still plain JSON), checked before they
are parsed: a file cut short, damaged or edited by hand (a card's memory_gib
changed) is a miss too. The CRC is not a secret: whoever runs as
this user could recompute it, but that user can as well edit the catalog's own
files or gputui's code, so no key kept beside the cache would stop them; a
keyed hash would cost hashlib/hmac on the dashboard's start path for nothing.
What the check does stop is every edit that is not a deliberate forgery of this
format, and the permission checks stop everyone else.

Where: `$GPUTUI_CACHE_DIR` when set (empty: no cache at all; the tests point it
at a temporary folder), else the user's cache directory (platformdirs:
~/.cache/gputui on Linux).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import stat
import zlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from gputui.catalog.catalog import Catalog
from gputui.catalog.models import Architecture, Card

ENV = "GPUTUI_CACHE_DIR"
# Bumped when the file's layout changes (the key changes with the code anyway).
FORMAT = 3
MAX_FILES = 8
MAX_BYTES = 16 << 20  # the shipped catalog's file is ~0.3 MB
_CODE = ("models.py", "bounds.py", "validate.py", "loader.py", "cache.py")
_HEAD = b'{"crc32":"%08x","payload":'
_HEAD_LEN = len(_HEAD % 0)
_MARKER = re.compile(rb'\{"crc32":"[0-9a-f]{8}","payload":\{"format":[0-9]+,')


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


def _ours(st: os.stat_result) -> bool:
    """Owned by this user and writable by nobody else (group or others)."""
    return st.st_uid == os.geteuid() and not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def trusted_dir(root: Path) -> bool:
    """Whether `root` is a folder only this user can write to (a symlink to one is fine)."""
    try:
        st = os.stat(root)
    except (OSError, ValueError):
        return False
    return stat.S_ISDIR(st.st_mode) and _ours(st)


def _read_trusted(path: Path) -> bytes | None:
    """The file's bytes if only this user could have written them, else None."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags)  # a symlink fails here (ELOOP); a FIFO does not block
    except (OSError, ValueError):
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or not _ours(st) or st.st_size > MAX_BYTES:
            return None
        with os.fdopen(os.dup(fd), "rb") as handle:
            return handle.read(MAX_BYTES + 1)
    except OSError:
        return None
    finally:
        os.close(fd)


def encode(data: Any) -> bytes:
    """The file's bytes for `data`: its JSON with the CRC-32 of exactly those bytes."""
    body = json.dumps(data, allow_nan=False, separators=(",", ":")).encode("utf-8")
    return _HEAD % zlib.crc32(body) + body + b"}"


def decode(raw: bytes) -> Any:
    """The data `encode` wrote, or None when the bytes are not exactly what it wrote."""
    body = raw[_HEAD_LEN:-1]
    if (
        len(raw) > MAX_BYTES
        or not raw.endswith(b"}")
        or raw[:_HEAD_LEN] != _HEAD % zlib.crc32(body)
    ):
        return None
    try:
        return json.loads(body)
    except (ValueError, RecursionError):
        return None


def read(directory: Path, key: dict[str, str]) -> Catalog | None:
    """The catalog cached for `directory` under `key`, or None (absent, stale, unreadable or
    not to be trusted: see the module docstring)."""
    root = cache_dir()
    if root is None or not trusted_dir(root):
        return None
    raw = _read_trusted(_file_for(directory, root))
    data = None if raw is None else decode(raw)
    if not isinstance(data, dict):
        return None
    try:
        if (
            data.get("format") != FORMAT
            or data.get("directory") != str(directory)
            or data.get("key") != key
        ):
            return None
        architectures = {k: _record(Architecture, v) for k, v in data["architectures"].items()}
        cards = tuple(_record(Card, v) for v in data["cards"])
    except (ValueError, TypeError, KeyError, AttributeError):
        return None
    return Catalog(cards, architectures, directory)


def _record(cls: type[Architecture] | type[Card], fields: Any) -> Any:
    if not isinstance(fields, dict) or set(fields) != set(cls.model_fields):
        raise ValueError("fields differ")  # written by another layout: a miss
    return cls(**fields)


def _make_dir(root: Path) -> bool:
    """Create `root` 0700 (its parents as usual) if it is missing; True when it may be used."""
    root.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.mkdir(root, 0o700)
    except FileExistsError:
        pass
    else:
        os.chmod(root, 0o700)  # the umask may have taken bits away; set exactly 0700
    return trusted_dir(root)


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
    from gputui.core.userfile import replace_file

    target = _file_for(directory, root)
    with contextlib.suppress(OSError, ValueError):
        if not _make_dir(root):
            return  # someone else's folder, or one others can write to: no cache at all
        # A file of that name that gputui cannot prove it wrote is the user's: kept.
        replace_file(
            target,
            encode(data),
            new_mode=0o600,
            keep_attributes=False,
            follow_symlinks=False,
            may_replace=_written_by_gputui,
        )
        _prune(root, target)


def _written_by_gputui(raw: bytes) -> bool:
    """Whether these bytes begin as every cache file gputui writes (`encode` of a record
    that starts with its format): the marker a user's own JSON file never carries. The CRC
    itself is not required, so a damaged or hand-edited cache file is still rebuilt."""
    return _MARKER.match(raw) is not None


def _prune(root: Path, kept: Path) -> None:
    """Remove the least recently written cache files beyond MAX_FILES (never `kept`).

    Only files gputui can prove it wrote are counted or removed: the name alone proves
    nothing (`GPUTUI_CACHE_DIR` may name a folder of the user's own `catalog-*.json`), so
    each is read without following links, must be this user's and must carry the marker
    every file `encode` writes; it is removed only if it is still that same file.
    """
    from gputui.core.userfile import read_own, remove_unchanged

    dated = []
    for path in root.glob("catalog-*.json"):
        found = read_own(path, MAX_BYTES)
        if found is not None and _written_by_gputui(found[0]):
            dated.append((found[1].st_mtime_ns, path, found[1]))
    dated.sort(key=lambda item: item[0], reverse=True)
    for _, path, seen in dated[MAX_FILES:]:
        if path != kept:
            remove_unchanged(path, seen)
