"""Where shipped data lives, in a wheel and in a checkout.

The top-level `catalog/` folder is the human-edited source of truth. A wheel
carries a copy at `gputui/_data/catalog` (hatch force-include); an editable
install or a plain checkout has no such copy, so we fall back to the
repository's own folder. Both paths are tested.
"""

from __future__ import annotations

from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parent


def catalog_dir() -> Path:
    packaged = _PACKAGE_DIR / "_data" / "catalog"
    if packaged.is_dir():
        return packaged
    checkout = _PACKAGE_DIR.parent.parent / "catalog"
    if checkout.is_dir():
        return checkout
    raise FileNotFoundError(
        f"gputui's catalog data is missing (looked in {packaged} and {checkout}); reinstall gputui"
    )


def examples_dir() -> Path:
    """The example models (`models.toml`, `llm/*.json`): the wheel's copy, else the checkout's.

    The top-level `examples/` folder is the only copy in the repository; a wheel carries
    it at `gputui/_data/examples` (hatch force-include), like the catalog.
    """
    packaged = _PACKAGE_DIR / "_data" / "examples"
    if packaged.is_dir():
        return packaged
    checkout = _PACKAGE_DIR.parent.parent / "examples"
    if checkout.is_dir():
        return checkout
    raise FileNotFoundError(
        f"gputui's example models are missing (looked in {packaged} and {checkout}); "
        "reinstall gputui"
    )


def scenarios_dir() -> Path:
    """Simulated-GPU scenarios ship inside the package itself."""
    return _PACKAGE_DIR / "telemetry" / "scenarios"


def default_scenario() -> Path:
    return scenarios_dir() / "demo.toml"
