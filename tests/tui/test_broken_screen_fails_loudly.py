"""A screen of gputui's own that fails to import raises, rather than vanishing behind
"not available yet": only a screen module that is not there at all is optional."""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

import pytest

import gputui.tui.dashboard_actions as actions


def _importing(fail: BaseException) -> Any:
    real = importlib.import_module

    def fake(name: str, package: str | None = None) -> ModuleType:
        if name == "gputui.tui.screens.fit":
            raise fail
        return real(name, package)

    return fake


def test_a_broken_screen_module_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    broken = ImportError("cannot import name 'check_transformer' from 'gputui.fit'")
    monkeypatch.setattr(actions.importlib, "import_module", _importing(broken))
    with pytest.raises(ImportError, match="check_transformer"):
        actions._optional_screen("gputui.tui.screens.fit", "FitScreen")


def test_a_missing_name_in_a_screen_module_raises() -> None:
    with pytest.raises(AttributeError):
        actions._optional_screen("gputui.tui.screens.fit", "NoSuchScreen")


def test_a_screen_module_that_is_not_there_is_optional(monkeypatch: pytest.MonkeyPatch) -> None:
    absent = ModuleNotFoundError("No module named 'gputui.tui.screens.fit'")
    absent.name = "gputui.tui.screens.fit"
    monkeypatch.setattr(actions.importlib, "import_module", _importing(absent))
    assert actions._optional_screen("gputui.tui.screens.fit", "FitScreen") is None
    inner = ModuleNotFoundError("No module named 'gputui.fit.nowhere'")
    inner.name = "gputui.fit.nowhere"  # the screen is there, but imports what is not
    monkeypatch.setattr(actions.importlib, "import_module", _importing(inner))
    with pytest.raises(ModuleNotFoundError):
        actions._optional_screen("gputui.tui.screens.fit", "FitScreen")
