"""The data layers must not import Textual, and the one-shot CLI must not pay for it.

Checked in a fresh interpreter: `sys.modules` after importing a layer says what
it really pulled in, whatever the test process itself has already imported.
"""

from __future__ import annotations

import pkgutil
import subprocess
import sys

import pytest

import gputui

DATA_LAYERS = (
    "gputui.core",
    "gputui.model",
    "gputui.sources",
    "gputui.history",
    "gputui.render",
    "gputui.catalog",
    "gputui.fit",
)


def _modules_of(package: str) -> list[str]:
    pkg = __import__(package, fromlist=["__path__"])
    names = [package]
    for info in pkgutil.walk_packages(pkg.__path__, prefix=package + "."):
        names.append(info.name)
    return names


def _imported_by(modules: list[str]) -> set[str]:
    code = (
        "import sys, importlib\n"
        f"for m in {modules!r}:\n"
        "    importlib.import_module(m)\n"
        "print('\\n'.join(sorted(sys.modules)))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    return set(out.split())


@pytest.mark.parametrize("package", DATA_LAYERS)
def test_data_layer_never_imports_textual(package: str) -> None:
    modules = _modules_of(package)
    loaded = _imported_by(modules)
    assert "textual" not in loaded, f"{package} pulls in textual"
    assert not any(m.startswith("gputui.tui") for m in loaded), f"{package} imports the TUI"


def test_cli_module_is_import_light() -> None:
    loaded = _imported_by(["gputui.cli"])
    heavy = {"textual", "pydantic", "pynvml", "psutil"} & loaded
    assert not heavy, f"importing gputui.cli loads {sorted(heavy)}"


def test_package_version_is_exposed() -> None:
    assert gputui.__version__.count(".") == 2


def test_fit_imports_torch_only_when_a_torch_model_is_traced() -> None:
    """Every gputui.fit module, the PyTorch front-end's included, imports without torch."""
    loaded = _imported_by(_modules_of("gputui.fit"))
    assert "torch" not in loaded, "a gputui.fit module imports torch at import time"
