"""Set-up every test shares.

The catalog keeps a validated copy of itself in the user's cache directory
(`gputui.catalog.cache`), and the dashboard saves its settings (and looks for a
models file) in the user's config directory; tests never write to ~, so from
before collection (some test modules load the catalog at import) both go to
temporary folders of this process, and subprocesses, which inherit the
environment, use them too. Under pytest-xdist each worker is a process of its
own and gets its own folders, so parallel tests never see each other's files.

Under CI (`CI` set, as `.ci/run` is run) hypothesis draws the same examples every
run (`derandomize`): a submission's verdict must not depend on which random inputs
one run happened to draw.

A Keras file is estimated for the backend Keras is configured with (KERAS_BACKEND,
else keras.json in KERAS_HOME): tests see none configured (an empty KERAS_HOME, no
KERAS_BACKEND), so their answers do not depend on the machine's Keras set-up. Locally each run draws new ones, and `make fuzz` runs the
families' generators for as long as one likes.
"""

from __future__ import annotations

import atexit
import inspect
import os
import shutil
import tempfile
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import settings

settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")

CACHE_ENV = "GPUTUI_CACHE_DIR"  # gputui.catalog.cache.ENV (not imported: before collection)
CONFIG_ENV = "XDG_CONFIG_HOME"  # platformdirs' user_config_dir: settings.toml, models.toml
KERAS_HOME_ENV = "KERAS_HOME"  # where Keras (and gputui) look for keras.json
_TEMP_DIRS = (CACHE_ENV, CONFIG_ENV, KERAS_HOME_ENV)
_saved: dict[str, str | None] = {}


def pytest_configure(config: pytest.Config) -> None:
    for name in _TEMP_DIRS:
        _saved[name] = os.environ.get(name)
        os.environ[name] = tempfile.mkdtemp(prefix=f"gputui-test-{name.lower()}-")
    _saved["KERAS_BACKEND"] = os.environ.pop("KERAS_BACKEND", None)


def pytest_unconfigure(config: pytest.Config) -> None:
    for name in (*_TEMP_DIRS, "KERAS_BACKEND"):
        if name not in _saved:
            continue
        if name != "KERAS_BACKEND":
            shutil.rmtree(os.environ.get(name, ""), ignore_errors=True)
        saved = _saved.pop(name)
        if saved is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = saved


def _weight(item: pytest.Item) -> float:
    """A rough cost, known before anything runs: `slow` tests (subprocesses, real servers),
    hypothesis tests, Pilot tests and SVG snapshots cost far more than a plain unit test."""
    if item.get_closest_marker("slow") is not None:
        return 5.0
    function = getattr(item, "function", None)
    if getattr(function, "is_hypothesis_test", False):
        return 5.0
    if inspect.iscoroutinefunction(function) or "snap_compare" in getattr(item, "fixturenames", ()):
        return 2.0
    return 0.02


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The costliest modules first, each module's tests in their own order.

    pytest-xdist hands out whole modules (`--dist loadscope`) in collection order: a long
    module handed out last keeps one worker busy while the other has nothing left to do.
    The sort is stable and the same on every worker, as xdist requires.
    """
    cost: dict[Any, float] = {}
    for item in items:
        cost[item.path] = cost.get(item.path, 0.0) + _weight(item)
    items.sort(key=lambda item: -cost[item.path])


@pytest.fixture(scope="session")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """One real Prometheus and fleet (tests/fleet.py) for every read-only test of it, in
    whichever folder: starting one takes seconds. Under pytest-xdist, one per worker."""
    from tests.fleet import start_fleet
    from tests.prometheus_harness import PROMETHEUS

    if PROMETHEUS is None:
        pytest.skip("needs the prometheus binary (apt install prometheus)")
    f = start_fleet(tmp_path_factory.mktemp("fleet"))
    yield f
    f.stop()


def run_fit(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """`gputui fit ARGV` in this process: its exit status, stdout and stderr.

    Test modules import it (`from tests.conftest import run_fit`); gputui is imported
    here, not at the top, because this file runs before collection.
    """
    from gputui.cli import main

    code = main(["fit", *argv])
    out = capsys.readouterr()
    return code, out.out, out.err


# `gputui fit --against` keeps observed peaks in the user's data directory, and every
# `gputui fit` reads them back: each test process gets an empty one of its own (set at
# import, before collection, like the folders above), never the machine's.
os.environ["GPUTUI_DATA_DIR"] = tempfile.mkdtemp(prefix="gputui-test-data-")
atexit.register(shutil.rmtree, os.environ["GPUTUI_DATA_DIR"], True)
