"""Only core/userfile.py writes, renames or deletes files: every other module goes through it.

Where gputui writes or removes a file in a user's folder, nothing the user had may be lost
(docs/architecture.md): the atomic, through-the-link, refuse-what-is-not-ours rules live in
one module. This scan of src/gputui reports, anywhere else, a call that writes, renames or
deletes a file: `open()`/`Path.open()` with a write mode, `os.open` with a write flag,
`write_text`, `write_bytes`, `unlink`, `rename`, `rmdir`, `touch`, a one-argument
`.replace(target)` (Path.replace; str.replace takes two), `os.replace`/`os.rename`/
`os.remove`/`os.truncate`, `shutil` moves and removals, `tempfile` files, and an SQLite
database opened (`sqlite3.connect` creates and writes its file).
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "gputui"
THE_WRITER = SRC / "core" / "userfile.py"
# Not a user's file: where a closed stdout is pointed at /dev/null.
# The recording store: SQLite writes its file in place (a store is appended to, never
# replaced), and only after core.userfile.lock_store has created, checked and locked it
# (recording/store.py); the reader opens it in SQLite's read-only mode (recording/reader.py).
ALLOWED = {
    (SRC / "core" / "outstream.py", "os.open"),
    (SRC / "recording" / "store.py", "sqlite3.connect"),
    (SRC / "recording" / "reader.py", "sqlite3.connect"),
}

METHODS = {"write_text", "write_bytes", "unlink", "rename", "rmdir", "touch", "symlink_to"}
FUNCTIONS = {
    "os.replace", "os.rename", "os.renames", "os.remove", "os.unlink", "os.truncate",
    "os.rmdir", "os.removedirs", "shutil.rmtree", "shutil.move", "shutil.copy",
    "shutil.copyfile", "shutil.copy2", "tempfile.mkstemp", "tempfile.NamedTemporaryFile",
    "sqlite3.connect",
}  # fmt: skip
WRITE_FLAGS = {"O_WRONLY", "O_RDWR", "O_CREAT", "O_TRUNC", "O_APPEND"}


def _dotted(node: ast.expr) -> str:
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return node.id if isinstance(node, ast.Name) else "?"


def _write_mode(call: ast.Call, at: int, unknown: bool) -> bool:
    """Whether the mode argument (position `at`, or `mode=`) writes; `unknown`: what a mode
    that is not a string literal counts as (for `x.open(arg)`, `arg` is often a name:
    a zip member, a request)."""
    mode = call.args[at] if len(call.args) > at else None
    for kw in call.keywords:
        if kw.arg == "mode":
            mode = kw.value
    if mode is None:
        return False
    if not isinstance(mode, ast.Constant) or not isinstance(mode.value, str):
        return unknown
    return any(c in mode.value for c in "wax+")


def findings(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.Call):
            continue
        name = _dotted(node.func)
        what = None
        if name in FUNCTIONS:
            what = name
        elif name == "open" and _write_mode(node, 1, unknown=True):
            what = "open() for writing"
        elif name == "os.open":
            flags = {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)}
            what = "os.open" if flags & WRITE_FLAGS else None
        elif isinstance(node.func, ast.Attribute):
            attr = node.func.attr
            one_target = len(node.args) == 1 and not node.keywords  # Path.replace(target)
            if attr in METHODS or (attr == "replace" and one_target):
                what = f".{attr}()"
            elif attr == "open" and _write_mode(node, 0, unknown=False):
                what = ".open() for writing"
        if what and (path, what) not in ALLOWED:
            found.append(f"{path.relative_to(SRC)}:{node.lineno}: {what}")
    return found


def test_only_core_userfile_writes_or_removes_files() -> None:
    found = [f for p in sorted(SRC.rglob("*.py")) if p != THE_WRITER for f in findings(p)]
    assert found == [], "write through gputui.core.userfile instead:\n" + "\n".join(found)


def test_the_scan_sees_each_kind_of_write(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "import os, shutil\n"
        "open(p, 'w')\nopen(p, mode='ab')\np.open('wb')\np.write_text('x')\np.unlink()\n"
        "os.replace(a, b)\np.replace(q)\nshutil.rmtree(d)\nos.open(p, os.O_WRONLY)\n"
        "open(p)\np.open('rb')\ns.replace('a', 'b')\nos.open(p, os.O_RDONLY)\n"
        "sqlite3.connect(p)\n"
    )
    global SRC
    saved, SRC = SRC, tmp_path
    try:
        lines = [int(f.split(":")[1]) for f in findings(sample)]
    finally:
        SRC = saved
    assert lines == [2, 3, 4, 5, 6, 7, 8, 9, 10, 15]
