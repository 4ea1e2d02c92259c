from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from gputui.fit.importers.hfkeys import from_hf_dict
from gputui.fit.transformer.model import TransformerModel, from_config

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "examples" / "llm"


def load_example(name: str) -> TransformerModel:
    raw = json.loads((EXAMPLES / f"{name}.json").read_text())
    return from_config(from_hf_dict(raw), name, str(EXAMPLES / f"{name}.json"))


@pytest.fixture
def llama3() -> TransformerModel:
    return load_example("llama-3-8b")


@pytest.fixture
def example() -> Callable[[str], TransformerModel]:
    """load_example, for tests (conftest is not importable under --import-mode=importlib)."""
    return load_example
