"""CI sets GPUTUI_REQUIRE_TORCH=1: there a torch test module fails instead of skipping
when torch is missing, so the PyTorch front-end's tests cannot pass by not running."""

from __future__ import annotations

import importlib.util

import pytest

from tests import torch_required


def _no_torch(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(
        torch_required.importlib.util,
        "find_spec",
        lambda name, *a: None if name == "torch" else real(name, *a),
    )


def test_without_torch_a_module_skips_locally(monkeypatch: pytest.MonkeyPatch) -> None:
    _no_torch(monkeypatch)
    monkeypatch.delenv("GPUTUI_REQUIRE_TORCH", raising=False)
    with pytest.raises(pytest.skip.Exception, match="pip install 'gputui\\[torch\\]'"):
        torch_required.require_torch()


def test_without_torch_a_module_fails_where_ci_requires_it(monkeypatch: pytest.MonkeyPatch) -> None:
    _no_torch(monkeypatch)
    monkeypatch.setenv("GPUTUI_REQUIRE_TORCH", "1")
    with pytest.raises(pytest.fail.Exception, match="GPUTUI_REQUIRE_TORCH=1"):
        torch_required.require_torch()
