"""The public API (docs/api.md): every name in gputui.fit's and gputui.sources' `__all__`
imports, is the object its module defines, and the docs page lists exactly them."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "api.md"
PACKAGES = ("gputui.fit", "gputui.sources")


def _documented(package: str) -> set[str]:
    """The names in the page's tables under `package`'s heading."""
    text = DOC.read_text(encoding="utf-8")
    section = text.split(f"## `{package}`", 1)[1].split("\n## ", 1)[0]
    names: set[str] = set()
    for line in section.splitlines():
        if line.startswith("| `"):
            first_cell = line.split("|")[1]
            names |= {n.split("(")[0] for n in re.findall(r"`([^`]+)`", first_cell)}
    return names


@pytest.mark.parametrize("package", PACKAGES)
def test_every_public_name_imports(package: str) -> None:
    module = importlib.import_module(package)
    assert module.__all__ == sorted(module.__all__) and len(set(module.__all__)) > 5
    for name in module.__all__:
        value = getattr(module, name)
        where, attr = module._PUBLIC[name]
        assert value is getattr(importlib.import_module(where), attr), name
    assert set(module._PUBLIC) == set(module.__all__)
    assert not hasattr(module, "no_such_name")


@pytest.mark.parametrize("package", PACKAGES)
def test_the_docs_page_lists_exactly_the_public_names(package: str) -> None:
    module = importlib.import_module(package)
    assert _documented(package) == set(module.__all__)


def test_from_import_gives_the_function_not_a_module() -> None:
    from gputui.fit import check

    assert callable(check) and check.__module__ == "gputui.fit.entry"
