"""Every dotted gputui name a docstring under src/ gives resolves to a module or an attribute.

A name counts when it starts with `gputui.` or with one of gputui's packages
(`fit.core.roofline`, `render.cluster_text.host_row`: docstrings name them relative to
gputui). `model.` is left out unless spelled `gputui.model.`, because `model.name`
in a docstring is most often an attribute of a variable; names that end in a file
extension (`fit.py`, `catalog.md`) are files, not modules.
"""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "gputui"
PACKAGES = sorted(p.name for p in SRC.iterdir() if (p / "__init__.py").is_file())
RELATIVE = [p for p in PACKAGES if p != "model"]
FILE_ENDINGS = {"py", "md", "json", "toml", "tcss", "yml", "yaml", "svg", "csv", "txt"}
ROOTS = "gputui\\.(?:" + "|".join(PACKAGES) + ")|" + "|".join(RELATIVE)
NAME = re.compile(r"(?<![\w.])((?:" + ROOTS + r")(?:\.[A-Za-z_]\w*)+)")


def docstrings(path: Path) -> list[tuple[int, str]]:
    """(line, text) of the module's, its classes' and its functions' docstrings."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            doc = ast.get_docstring(node, clean=False)
            if doc is not None:
                found.append((node.body[0].lineno, doc))
    return found


def named(doc: str) -> list[str]:
    names = []
    for match in NAME.finditer(doc):
        name = match.group(1)
        if name.rsplit(".", 1)[1] in FILE_ENDINGS:
            continue
        names.append(name if name.startswith("gputui.") else "gputui." + name)
    return names


def resolves(name: str) -> bool:
    """Whether the longest importable prefix of `name` holds the rest as attributes."""
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj: object = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attr in parts[cut:]:
            if not hasattr(obj, attr):
                return False
            obj = getattr(obj, attr)
        return True
    return False


def references() -> list[tuple[str, str]]:
    return [
        (f"{path.relative_to(SRC.parent)}:{line}", name)
        for path in sorted(SRC.rglob("*.py"))
        for line, doc in docstrings(path)
        for name in named(doc)
    ]


def test_docstring_names_resolve() -> None:
    refs = references()
    assert len(refs) > 20  # the scan finds the names docstrings give
    dead = [f"{where}: {name}" for where, name in refs if not resolves(name)]
    assert dead == []


@pytest.mark.parametrize(
    ("doc", "expected"),
    [
        ("see fit.core.roofline and gputui.render.cluster_text.", ["gputui.fit.core.roofline",
                                                                  "gputui.render.cluster_text"]),
        ("`model.name` and gputui.model.snapshot", ["gputui.model.snapshot"]),
        ("drawn by fit.py, documented in docs/fit.md", []),
    ],
)  # fmt: skip
def test_what_counts_as_a_name(doc: str, expected: list[str]) -> None:
    assert named(doc) == expected


def test_a_dead_name_is_caught() -> None:
    assert resolves("gputui.render.cluster_text.host_row")
    assert not resolves("gputui.fit.roofline")
    assert not resolves("gputui.render.cluster_text.no_such_row")
