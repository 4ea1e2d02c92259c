"""Set-up every test shares.

The catalog keeps a validated copy of itself in the user's cache directory
(`gputui.catalog.cache`); tests never write to ~, so from before collection
(some test modules load the catalog at import) it goes to a temporary folder,
and subprocesses, which inherit the environment, use it too.

Under CI (`CI` set, as `.ci/run` is run) hypothesis draws the same examples every
run (`derandomize`): a submission's verdict must not depend on which random inputs
one run happened to draw. Locally each run draws new ones, and `make fuzz` runs the
families' generators for as long as one likes.
"""

from __future__ import annotations

import os
import shutil
import tempfile

import pytest
from hypothesis import settings

settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")

CACHE_ENV = "GPUTUI_CACHE_DIR"  # gputui.catalog.cache.ENV (not imported: before collection)
_saved: dict[str, str | None] = {}


def pytest_configure(config: pytest.Config) -> None:
    _saved[CACHE_ENV] = os.environ.get(CACHE_ENV)
    os.environ[CACHE_ENV] = tempfile.mkdtemp(prefix="gputui-test-cache-")


def pytest_unconfigure(config: pytest.Config) -> None:
    if CACHE_ENV not in _saved:
        return
    shutil.rmtree(os.environ.get(CACHE_ENV, ""), ignore_errors=True)
    saved = _saved.pop(CACHE_ENV)
    if saved is None:
        os.environ.pop(CACHE_ENV, None)
    else:
        os.environ[CACHE_ENV] = saved
