"""Fuzz family `userfiles`: the files gputui writes for the user, under hostile contents.

Two kinds of case:

- settings: a hand-written-looking `settings.toml` (valid and bad values, unknown keys,
  comments, tables, CRLF, unicode), sometimes broken (not UTF-8, cut short, huge, nested
  deep, NUL bytes, flipped bytes), put in place as a regular, read-only or group-writable
  file, through a symlink (or a chain, a dangling one, a loop), or as a FIFO or folder.
  It is loaded as the dashboard loads it and, when the dashboard would, saved with a
  random set of changes. Property: the file is byte for byte what it was, or it was read
  whole, is still valid TOML, every line that does not define a changed setting is still
  there, every other key has its value, each change is in, and a link is still that link
  with its target's mode kept. Every setting applied is a valid one; a warning is one line.
- cache: a `GPUTUI_CACHE_DIR` holding the user's own files with gputui's names
  (`catalog-*.json` with other contents, the exact name the cache would write, symlinks,
  FIFOs, folders, unreadable files) beside real cache files; the cache is then written for
  more catalog folders than it keeps. Property: every file of the user's is untouched and
  at most `MAX_FILES` of gputui's remain.

Settings in a known key are kept on one line by the generator, so "every other line
survives" is exact; multi-line values go under unknown keys and tables.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from random import Random
from typing import Any

import generators as gen

FAMILY = "userfiles"
KNOWN = ("interval", "sort", "reverse", "filter", "mine", "theme", "hidden_columns")
COLUMNS = ("gpu", "pid", "user", "type", "gpu_mem", "sm", "gmbw", "cpu", "host_mem", "time")
HIDEABLE = ("user", "type", "gpu_mem", "sm", "gmbw", "cpu", "host_mem", "time")
TEXTS = ["python", 'a "quoted" word', "back\\slash", "ünïcödé ✓", "", "x" * 250, "tab\there",
         "esc\x1b[31m", "new\nline", "# not a comment", "'single'", "]", "a = 1"]  # fmt: skip
SETUPS = ("regular", "regular", "regular", "absent", "symlink", "chain", "dangling", "loop",
          "read-only", "group-writable", "fifo", "folder")  # fmt: skip


@dataclass
class Case:
    kind: str  # "settings" or "cache"
    data: bytes = b""
    setup: str = "regular"
    changes: dict[str, Any] = field(default_factory=dict)
    cache_files: list[tuple[str, str, bytes]] = field(default_factory=list)  # name, kind, bytes
    writes: int = 0


# --- settings -----------------------------------------------------------------------------


def _str(rng: Random, text: str) -> str:
    if rng.random() < 0.3 and "'" not in text and "\n" not in text and text.isprintable():
        return f"'{text}'"
    return gen._string(text)


def _value_line(rng: Random, key: str) -> str:
    """One line setting `key`: a valid value, or a bad one."""
    good = rng.random() < 0.6
    if key == "interval":
        v = (
            rng.choice([0.25, 1, 2.0, 3600])
            if good
            else rng.choice([0.05, 0, -1, 1e309, "'1'", "nan", "inf", 99999])
        )
    elif key == "sort":
        v = _str(rng, rng.choice(COLUMNS)) if good else rng.choice(['"bogus"', "7", "[]", '""'])
    elif key in ("reverse", "mine"):
        v = rng.choice(["true", "false"]) if good else rng.choice(['"yes"', "1", "[true]"])
    elif key == "filter":
        v = _str(rng, rng.choice(TEXTS[:4])) if good else rng.choice(["1", _str(rng, "x" * 250)])
    elif key == "theme":
        v = _str(rng, rng.choice(["nord", "gruvbox", "textual-dark"])) if good else '""'
    else:
        cols = rng.sample(HIDEABLE, rng.randint(0, 3)) if good else ["pid", "bogus"]
        v = "[" + ", ".join(_str(rng, c) for c in cols) + "]"
    key_text = f'"{key}"' if rng.random() < 0.1 else key
    space = rng.choice([" = ", "=", "  =   "])
    tail = rng.choice(["", "", "  # why I set this", " #no space", "\t# tab ✓"])
    return f"{key_text}{space}{v}{tail}"


def _other_block(rng: Random) -> list[str]:
    roll = rng.randrange(9)
    if roll == 0:
        return [rng.choice(["# a comment", "#", "# ünïcödé ✓ comment", "   # indented", "## more"])]
    if roll == 1:
        return [""]
    if roll == 2:
        value = rng.choice(["1", '"red"', "[1, 2]", "{ a = 1 }"])
        return [f"colour{rng.randrange(9)} = {value}"]
    if roll == 3:
        return ['notes = """', "# inside a string, not a comment", 'line two"""']
    if roll == 4:
        return ["palette = [", '  "a",  # first', '  "b",', "]"]
    if roll == 5:
        return [f"sub{rng.randrange(9)}.deep.key = 1"]
    if roll == 6:
        return ["x = 1979-05-27T07:32:00Z", "y = 0x_ff" if rng.random() < 0.3 else "y = 0xff"]
    if roll == 7:
        return ["'literal key' = 'v'", "w = 'C:\\path'"]
    return ["a" * rng.randint(1, 40) + f" = {rng.randrange(10**6)}"]


def settings_text(rng: Random) -> str:
    lines: list[str] = []
    keys = rng.sample(KNOWN, rng.randint(0, len(KNOWN)))
    for key in keys:
        for _ in range(rng.randint(0, 2)):
            lines += _other_block(rng)
        lines.append(_value_line(rng, key))
    if rng.random() < 0.1 and keys:  # the same key twice: not TOML
        lines.append(_value_line(rng, keys[0]))
    for _ in range(rng.randint(0, 3)):
        lines += _other_block(rng)
    if rng.random() < 0.3:
        lines += ["", "[notes]", "why = 'my table'", "interval = 'not the setting'"]
    if rng.random() < 0.1:
        lines += ["[[runs]]", "n = 1", "[[runs]]", "n = 2"]
    if rng.random() < 0.1 and "sort" not in keys:
        lines.append("sort.by = 'pid'")  # a setting the user made a table
    end = rng.choice(["\n", "\n", "\r\n", ""])
    return "\n".join(lines).replace("\n", end if end else "\n") + (end or "")


def _break(rng: Random, raw: bytes) -> bytes:
    roll = rng.randrange(8)
    if roll == 0:
        at = rng.randrange(len(raw) + 1)
        return raw[:at] + rng.choice([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x80\x80"]) + raw[at:]
    if roll == 1:
        return raw[: rng.randrange(len(raw) + 1)]
    if roll == 2:
        return raw + b"# padding\n" * rng.choice([7000, 100_000])  # over 64 KiB
    if roll == 3:
        depth = rng.choice([5, 64, 1000, 100_000])
        return raw + b"\nnested = " + b"[" * depth + b"]" * depth + b"\n"
    if roll == 4:
        return raw + b'\nk = "a\x00b"\n'
    if roll == 5:
        return b"\xef\xbb\xbf" + raw  # a BOM
    if roll == 6:
        return raw + b"\n" + b"n = " + b"9" * rng.choice([20, 5000]) + b"\n"
    out = bytearray(raw or b"x")
    for _ in range(rng.randint(1, 3)):
        out[rng.randrange(len(out))] = rng.randrange(256)
    return bytes(out)


def _changes(rng: Random) -> dict[str, Any]:
    pool: dict[str, Any] = {
        "interval": rng.choice([0.25, 0.5, 1.0, 2.0, 30.0]),
        "sort": rng.choice(COLUMNS),
        "reverse": rng.random() < 0.5,
        "filter": rng.choice(TEXTS[:10]),
        "mine": rng.random() < 0.5,
        "theme": rng.choice(["nord", "gruvbox", "textual-light"]),
        "hidden_columns": tuple(rng.sample(HIDEABLE, rng.randint(0, 3))),
    }
    picked = {k: pool[k] for k in rng.sample(KNOWN, rng.randint(0, 3))}
    for key in list(picked):
        if rng.random() < 0.1:
            picked[key] = None  # removed
    if rng.random() < 0.05:
        picked["interval"] = 0.01  # a value the settings refuse: a warning, nothing written
    return picked


# --- cache --------------------------------------------------------------------------------


def _cache_files(rng: Random) -> list[tuple[str, str, bytes]]:
    files = []
    for n in range(rng.randint(0, 12)):
        name = rng.choice(
            [f"catalog-{rng.getrandbits(32):08x}.json", f"catalog-{n}.json", "catalog-.json",
             "catalog-mine.json", "TARGET", f"catalog-{n}.json.tmp", "notes.txt"]
        )  # fmt: skip
        kind = rng.choice(["file", "file", "file", "symlink", "fifo", "folder", "unreadable"])
        data = rng.choice(
            [b'{"cards": []}', b"", b"not json", b'{"crc32":"00000000","payload":{"x":1}}',
             b'{"crc32":"zz","payload":{"format":3,', b"\xff\xfe", b'{"format": 3}']
        )  # fmt: skip
        files.append((name, kind, data))
    return files


def make_case(rng: Random) -> Case:
    if rng.random() < 0.25:
        return Case("cache", cache_files=_cache_files(rng), writes=rng.randint(1, 12))
    raw = settings_text(rng).encode("utf-8")
    if rng.random() < 0.3:
        raw = _break(rng, raw)
    return Case("settings", raw, rng.choice(SETUPS), _changes(rng))


def case_text(case: Case) -> bytes:
    if case.kind == "cache":
        head = "".join(f"# {name} ({kind}): {data!r}\n" for name, kind, data in case.cache_files)
        return f"# cache, {case.writes} writes\n{head}".encode()
    return f"# {case.setup}, changes {case.changes!r}\n".encode() + case.data


# --- running a settings case --------------------------------------------------------------


def _place(case: Case, home: Path) -> tuple[Path, Path | None]:
    """(the settings path the dashboard uses, the file it resolves to, if one)."""
    path = home / "config" / "gputui" / "settings.toml"
    path.parent.mkdir(parents=True)
    target = home / "dotfiles" / "gputui.toml"
    target.parent.mkdir()
    setup = case.setup
    if setup == "absent":
        return path, path
    if setup in ("regular", "read-only", "group-writable"):
        path.write_bytes(case.data)
        path.chmod({"regular": 0o600, "read-only": 0o444, "group-writable": 0o664}[setup])
        return path, path
    if setup == "symlink":
        target.write_bytes(case.data)
        target.chmod(0o644)
        path.symlink_to(Path("..") / ".." / "dotfiles" / "gputui.toml")
        return path, target
    if setup == "chain":
        target.write_bytes(case.data)
        middle = home / "dotfiles" / "middle.toml"
        middle.symlink_to(target)
        path.symlink_to(middle)
        return path, target
    if setup == "dangling":
        path.symlink_to(home / "dotfiles" / "gone.toml")
    elif setup == "loop":
        path.symlink_to(home / "dotfiles" / "loop.toml")
        (home / "dotfiles" / "loop.toml").symlink_to(path)
    elif setup == "fifo":
        os.mkfifo(path)
    elif setup == "folder":
        path.mkdir()
    return path, None


def _state(path: Path, target: Path | None) -> tuple[Any, ...]:
    """(the link's text, the file's bytes, its mode, what is at the path: link, FIFO...)."""
    link = os.readlink(path) if path.is_symlink() else None
    kind = stat.S_IFMT(os.lstat(path).st_mode) if os.path.lexists(path) else None
    if target is None or not target.exists():
        return (link, None, None, kind)
    st = target.stat()
    return (link, target.read_bytes(), stat.S_IMODE(st.st_mode), kind)


def _wrong(what: str, detail: object = "") -> gen.Outcome:
    return gen.Outcome("wrong-accept", f"{what} | {str(detail)[:100]}")


def _changed_key(line: str, changed: set[str]) -> bool:
    head = line.split("=", 1)[0].strip().strip("\"'")
    return "=" in line and head in changed


def _valid_settings(settings: Any) -> str | None:
    """The first applied setting that the rules refuse, if any."""
    from gputui.tui.settings import _FIELDS, Settings, SettingsError

    for key, check in _FIELDS.items():
        value = getattr(settings, key)
        if value is None or value == getattr(Settings(), key):
            continue
        try:
            check(list(value) if isinstance(value, tuple) else value)
        except SettingsError:
            return key
    return None


def run_settings(case: Case, home: Path) -> gen.Outcome:
    from gputui.core.errors import UserError
    from gputui.core.tomlsafe import parse_toml
    from gputui.tui.settings import load, save_settings

    path, target = _place(case, home)
    before = _state(path, target)
    loaded = load(path)
    if loaded.warning is not None and "\n" in loaded.warning:
        return _wrong("a warning of more than one line", loaded.warning)
    bad = _valid_settings(loaded.settings)
    if bad is not None:
        return _wrong(f"a bad {bad} applied", getattr(loaded.settings, bad))
    warning = save_settings(path, case.changes) if loaded.whole else None
    if warning is not None and "\n" in warning:
        return _wrong("a warning of more than one line", warning)
    after = _state(path, target)
    rejected = loaded.warning is not None or warning is not None
    verdict = gen.Outcome("rejected") if rejected else gen.OK
    if after == before:
        return verdict
    if not loaded.whole:
        return _wrong("a file gputui could not read whole was written", case.setup)
    if after[0] != before[0] or (before[3] is not None and after[3] != before[3]):
        return _wrong("the link, or what is at the path, changed", after[0] or after[3])
    if before[1] is not None and after[2] != before[2]:
        return _wrong("the file's mode changed", oct(after[2] or 0))
    if target is None or after[1] is None:
        return _wrong("written where nothing was to be written", case.setup)
    old_text = before[1].decode("utf-8") if before[1] is not None else ""
    new_text = after[1].decode("utf-8")
    try:
        old = parse_toml(old_text, "before") if before[1] is not None else {}
        new = parse_toml(new_text, "after")
    except UserError as exc:
        return _wrong("the file is no longer TOML", exc)
    tables = {k for k, v in old.items() if isinstance(v, dict)}
    changed = {k for k in case.changes if k not in tables}
    for key, value in old.items():
        if key not in changed and new.get(key) != value:
            return _wrong("a setting it did not change was changed or lost", key)
    for key in changed:
        want = case.changes[key]
        want = list(want) if isinstance(want, tuple) else want
        if new.get(key) != want:
            return _wrong("a change is not in the file", f"{key}: {new.get(key)!r} != {want!r}")
    new_lines = new_text.splitlines()
    for line in old_text.splitlines():
        if not _changed_key(line, changed) and line not in new_lines:
            return _wrong("a line of the user's is gone", line)
    return verdict


# --- running a cache case ---------------------------------------------------------------


def _make_cache_file(root: Path, name: str, kind: str, data: bytes, elsewhere: Path) -> None:
    path = root / name
    if path.exists() or path.is_symlink():
        return
    if kind == "symlink":
        mine = elsewhere / f"{name}.target"
        mine.write_bytes(data)
        path.symlink_to(mine)
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "folder":
        path.mkdir()
        (path / "inside").write_bytes(data)
    else:
        path.write_bytes(data)
        if kind == "unreadable":
            path.chmod(0o000)


def _snapshot(folder: Path) -> dict[str, tuple[Any, ...]]:
    out: dict[str, tuple[Any, ...]] = {}
    for path in folder.rglob("*"):
        st = os.lstat(path)
        if stat.S_ISLNK(st.st_mode):
            out[str(path)] = ("link", os.readlink(path))
        elif stat.S_ISREG(st.st_mode):
            out[str(path)] = ("file", path.read_bytes(), stat.S_IMODE(st.st_mode))
        else:
            out[str(path)] = ("other", stat.S_IFMT(st.st_mode))
    return out


def run_cache(case: Case, home: Path) -> gen.Outcome:
    from gputui.catalog import cache
    from gputui.catalog.catalog import Catalog

    root = home / "cache"
    root.mkdir(mode=0o700)
    elsewhere = home / "elsewhere"
    elsewhere.mkdir()
    folders = [home / f"catalog{n}" for n in range(case.writes)]
    for name, kind, data in case.cache_files:
        if name == "TARGET":
            name = cache._file_for(folders[0], root).name
        _make_cache_file(root, name, kind, data, elsewhere)
    theirs = _snapshot(root) | _snapshot(elsewhere)
    saved = os.environ.get(cache.ENV)
    os.environ[cache.ENV] = str(root)
    try:
        for folder in folders:
            cache.write(folder, {"k": str(folder)}, Catalog((), {}, folder))
    finally:
        if saved is None:
            os.environ.pop(cache.ENV, None)
        else:
            os.environ[cache.ENV] = saved
    now = _snapshot(root) | _snapshot(elsewhere)
    for where, what in theirs.items():
        if now.get(where) != what:
            return _wrong("a file of the user's was changed or removed", Path(where).name)
    ours = [w for w in now if w not in theirs]
    if len(ours) > cache.MAX_FILES:
        return _wrong("more cache files kept than MAX_FILES", len(ours))
    refused = sum(1 for f in folders if str(cache._file_for(f, root)) in theirs)
    return gen.Outcome("rejected") if refused else gen.OK


def run_case(case: Case, workdir: Path) -> gen.Outcome:
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        home = Path(tmp)
        try:
            if case.kind == "cache":
                return run_cache(case, home)
            return run_settings(case, home)
        finally:
            for path in home.rglob("*"):  # let the cleanup remove what a case made unreadable
                with contextlib.suppress(OSError):
                    if not path.is_symlink():
                        path.chmod(0o700)
