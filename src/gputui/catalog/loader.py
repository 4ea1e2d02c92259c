"""Read the catalog's TOML files into validated records, failing with one useful line.

The catalog is edited by hand, so a mistake must point at the file, the line and
the field; a pydantic traceback would point at our code instead. Loading is
cached per directory because the TUI, the fit checker and the CLI all ask for it,
and across runs (`gputui.catalog.cache`): a directory whose files and checks have
not changed since it was last validated is read back from plain JSON, without
TOML or pydantic (imported here only on a miss).
"""

from __future__ import annotations

import functools
import re
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gputui.catalog import cache
from gputui.catalog.catalog import Catalog
from gputui.catalog.models import Architecture, Card
from gputui.core.errors import UserError

if TYPE_CHECKING:
    from pydantic import ValidationError

ARCHITECTURES_FILE = "architectures.toml"
CARDS_DIR = "cards"

_CARD_HEADER = re.compile(r"^\s*\[\[\s*card\s*\]\]")
# The dashboard's card labels and its fit line ask from two threads at start-up:
# one load, not two catalogs in memory (or two validations on a cache miss).
_LOADING = threading.Lock()
# Whether a cache miss is validated by a child process (see validate_in_child).
_IN_CHILD = False
CHILD_TIMEOUT_S = 60.0


def validate_in_child(enabled: bool = True) -> None:
    """For a long-running process that only reads the catalog (the dashboard).

    On a cache miss (first run after an install, an upgrade or a catalog edit) the
    catalog is validated by `python -m gputui.catalog.warm`, which writes the
    cache, and this process reads the cache: pydantic (~9 MiB of resident memory,
    kept for the life of the process once imported) never loads here. When the
    child cannot help (no cache directory, a refused catalog, any failure), the
    catalog is validated here as usual, so errors read exactly as always. Off by
    default: a one-shot command would pay a second interpreter start instead.
    """
    global _IN_CHILD
    _IN_CHILD = enabled


def load_catalog(directory: Path | None = None) -> Catalog:
    """Load (once per directory) the architectures and every cards/*.toml file."""
    if directory is None:
        from gputui.core.resources import catalog_dir

        directory = catalog_dir()
    with _LOADING:
        return _load_cached(Path(directory).resolve())


@functools.lru_cache(maxsize=8)
def _load_cached(directory: Path) -> Catalog:
    arch_path = directory / ARCHITECTURES_FILE
    if not arch_path.is_file():
        raise UserError(f"{_shown(arch_path)}: catalog architectures file is missing")
    cards_dir = directory / CARDS_DIR
    card_paths = sorted(cards_dir.glob("*.toml")) if cards_dir.is_dir() else []
    key = cache.content_key(
        [(ARCHITECTURES_FILE, arch_path), *((f"{CARDS_DIR}/{p.name}", p) for p in card_paths)]
    )
    if key is not None:
        kept = cache.read(directory, key)
        if kept is None and _IN_CHILD and _warm_in_child(directory):
            kept = cache.read(directory, key)
        if kept is not None:
            return kept
    catalog = _validated(directory, arch_path, card_paths)
    if key is not None:
        cache.write(directory, key, catalog)
    return catalog


def _warm_in_child(directory: Path) -> bool:
    """Validate `directory` in a child process that writes the cache; True when it did."""
    if cache.cache_dir() is None:
        return False
    import subprocess
    import sys

    import gputui

    # `-m` puts the working directory first on the child's sys.path: run it where this
    # process's own gputui package lies, so no ./gputui of a shared directory is run.
    home = Path(gputui.__file__).resolve().parent.parent
    try:
        done = subprocess.run(
            [sys.executable, "-m", "gputui.catalog.warm", str(directory)],
            cwd=home,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=CHILD_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


def _validated(directory: Path, arch_path: Path, card_paths: list[Path]) -> Catalog:
    architectures = _load_architectures(arch_path)
    cards: list[tuple[Path, str, int, Card]] = []
    for path in card_paths:
        cards.extend(_load_cards(path))
    _check_references(architectures, cards)
    return Catalog(tuple(card for _, _, _, card in cards), architectures, directory)


def _shown(path: Path) -> str:
    """The path as the user would type it: relative to the working directory when inside it."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _parse(path: Path) -> tuple[str, dict[str, Any]]:
    """Text and data of a catalog file; hostile TOML (deep nesting, huge numbers) is one line."""
    from gputui.core.tomlsafe import read_toml

    return read_toml(path, _shown(path), what="catalog file")


def _field_line(lines: list[str], start: int, end: int, field: str) -> int | None:
    """1-based line of `field = ...` within lines[start:end], or None."""
    pattern = re.compile(
        rf"""^\s*(?:{re.escape(field)}|"{re.escape(field)}"|'{re.escape(field)}')\s*="""
    )
    for number in range(start, min(end, len(lines))):
        if pattern.match(lines[number]):
            return number + 1
    return None


def _validation_message(exc: ValidationError) -> tuple[str, str]:
    """(field, message) of the first error, in the words a catalog editor needs."""
    error = exc.errors()[0]
    loc = [str(part) for part in error["loc"]]
    field = loc[0] if loc else "?"
    detail = error["msg"]
    if not loc:  # a whole-card check (Card._derived_is_explained) names its field first
        found = re.match(r"(?:Value error, )?([a-z0-9_]+): (.*)", detail)
        if found:
            field, detail = found.group(1), found.group(2)
    if len(loc) > 1:
        detail = f"item {'.'.join(loc[1:])}: {detail}"
    return field, detail


def _load_architectures(path: Path) -> dict[str, Architecture]:
    from pydantic import ValidationError

    from gputui.catalog.validate import validate

    text, data = _parse(path)
    lines = text.splitlines()
    headers: dict[str, int] = {}
    for number, text_line in enumerate(lines):
        found = re.match(r"^\s*\[\s*([A-Za-z0-9_-]+)\s*\]", text_line)
        if found:
            headers[found.group(1)] = number
    architectures: dict[str, Architecture] = {}
    for key, table in data.items():
        start = headers.get(key, 0)
        following = [n for n in headers.values() if n > start]
        end = min(following) if following else len(lines)
        where = f"{_shown(path)}:{start + 1}"
        if not isinstance(table, dict):
            raise UserError(f"{where}: {key!r} must be a table [{key}] describing an architecture")
        if "key" in table:
            line = _field_line(lines, start, end, "key") or start + 1
            raise UserError(
                f"{_shown(path)}:{line}: architecture {key!r}: key: "
                "remove it, the table name is the key"
            )
        try:
            arch = validate(Architecture, {**table, "key": key})
        except ValidationError as exc:
            field, detail = _validation_message(exc)
            line = _field_line(lines, start, end, field) or start + 1
            raise UserError(
                f"{_shown(path)}:{line}: architecture {key!r}: {field}: {detail}"
            ) from None
        architectures[key] = arch
    return architectures


def _load_cards(path: Path) -> list[tuple[Path, str, int, Card]]:
    """Cards of one file, each with (path, text line of its name, entry index)."""
    from pydantic import ValidationError

    from gputui.catalog.validate import validate

    text, data = _parse(path)
    lines = text.splitlines()
    extra = sorted(set(data) - {"card"})
    if extra:
        line = _field_line(lines, 0, len(lines), extra[0]) or 1
        raise UserError(
            f"{_shown(path)}:{line}: unexpected top-level key {extra[0]!r}; "
            "a cards file holds only [[card]] entries"
        )
    entries = data.get("card", [])
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise UserError(f"{_shown(path)}: 'card' must be written as [[card]] tables")
    starts = [n for n, text_line in enumerate(lines) if _CARD_HEADER.match(text_line)]
    loaded: list[tuple[Path, str, int, Card]] = []
    for index, entry in enumerate(entries):
        start = starts[index] if index < len(starts) else 0
        end = starts[index + 1] if index + 1 < len(starts) else len(lines)
        name = entry.get("name")
        label = f'card "{name}"' if isinstance(name, str) else f"card #{index + 1}"
        name_line = _field_line(lines, start, end, "name") or start + 1
        try:
            card = validate(Card, entry)
        except ValidationError as exc:
            field, detail = _validation_message(exc)
            line = _field_line(lines, start, end, field) or name_line
            raise UserError(f"{_shown(path)}:{line}: {label}: {field}: {detail}") from None
        loaded.append((path, f"{_shown(path)}:{name_line}", index, card))
    return loaded


def _check_references(
    architectures: dict[str, Architecture], cards: list[tuple[Path, str, int, Card]]
) -> None:
    """Mistakes that only show across entries: dangling keys, duplicates, clashing aliases."""
    owner_of_cc: dict[str, str] = {}
    for arch in architectures.values():
        for cc in arch.compute_capabilities:
            if cc in owner_of_cc:
                raise UserError(
                    f"catalog architectures: compute capability {cc} is listed under both "
                    f"{owner_of_cc[cc]!r} and {arch.key!r}"
                )
            owner_of_cc[cc] = arch.key
    seen_names: dict[str, str] = {}
    seen_aliases: dict[str, list[tuple[str, Card]]] = {}
    for _, where, _, card in cards:
        label = f'{where}: card "{card.name}"'
        card_arch = architectures.get(card.architecture)
        if card_arch is None:
            known = ", ".join(sorted(architectures))
            raise UserError(
                f"{label}: architecture: unknown architecture {card.architecture!r} "
                f"(known: {known})"
            )
        if card.compute_capability not in card_arch.compute_capabilities:
            ccs = ", ".join(card_arch.compute_capabilities)
            raise UserError(
                f"{label}: compute_capability: {card.compute_capability} is not a "
                f"{card_arch.name} compute capability ({ccs})"
            )
        folded = card.name.casefold()
        if folded in seen_names:
            raise UserError(f"{label}: name: duplicate of the card at {seen_names[folded]}")
        seen_names[folded] = where
        for alias in card.nvml_names:
            for other_where, other in seen_aliases.get(alias.casefold(), []):
                if other.name != card.name and abs(other.memory_gib - card.memory_gib) < 0.5:
                    raise UserError(
                        f'{label}: nvml_names: {alias!r} also names "{other.name}" at '
                        f"{other_where} with the same memory; the matcher could not tell them apart"
                    )
            seen_aliases.setdefault(alias.casefold(), []).append((where, card))
