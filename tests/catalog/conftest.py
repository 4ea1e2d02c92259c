"""Shared fixtures for the catalog tests: the shipped catalog and a scratch catalog folder."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from gputui.catalog import Catalog, load_catalog
from gputui.core.resources import catalog_dir

# A minimal valid card, written out as TOML lines so tests can break one field at a time.
GOOD_CARD = """\
[[card]]
name = "Test Card"
nvml_names = ["NVIDIA Test Card"]
architecture = "ampere"
compute_capability = "8.6"
segment = "consumer"
memory_gib = 24
source = "made up for a test"
"""


@pytest.fixture(scope="session")
def catalog() -> Catalog:
    return load_catalog()


@pytest.fixture
def scratch_catalog(tmp_path: Path) -> Callable[[str], Path]:
    """A catalog folder with the real architectures and one cards file holding `text`."""

    def make(text: str, filename: str = "test.toml") -> Path:
        root = tmp_path / "catalog"
        (root / "cards").mkdir(parents=True, exist_ok=True)
        shutil.copy(catalog_dir() / "architectures.toml", root / "architectures.toml")
        (root / "cards" / filename).write_text(text, encoding="utf-8")
        return root

    return make
