"""Where shipped data lives, in a wheel and in a checkout.

The top-level `catalog/` and `examples/` folders are the human-edited sources of
truth. A wheel carries copies at `gputui/_data/` (hatch force-include); an editable
install or a plain checkout has no such copy, so we fall back to the
repository's own folder. Both paths are tested.
"""

from __future__ import annotations

from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parent.parent  # src/gputui, above core/


def _shipped(folder: str, what: str) -> Path:
    """`gputui/_data/<folder>` in a wheel, else the checkout's top-level `<folder>/`."""
    packaged = _PACKAGE_DIR / "_data" / folder
    if packaged.is_dir():
        return packaged
    checkout = _PACKAGE_DIR.parent.parent / folder
    if checkout.is_dir():
        return checkout
    raise FileNotFoundError(
        f"gputui's {what} is missing (looked in {packaged} and {checkout}); reinstall gputui"
    )


def catalog_dir() -> Path:
    """The card catalog (`architectures.toml`, `cards/*.toml`)."""
    return _shipped("catalog", "catalog data")


def examples_dir() -> Path:
    """The example models (`models.toml`, `llm/*.json`); examples/ is their only copy."""
    return _shipped("examples", "example models folder")


def scenarios_dir() -> Path:
    """Simulated-GPU scenarios ship inside the package itself."""
    return _PACKAGE_DIR / "sources" / "simulated" / "scenarios"


def xid_catalog_path() -> Path:
    """What each NVIDIA XID means and the recommended action: data the alert rules read,
    shipped inside the package beside them (alerts/), as the scenarios are."""
    return _PACKAGE_DIR / "alerts" / "xid.toml"


def scenario_path(given: Path) -> Path:
    """`--scenario NAME`: the file as given when it exists, else a shipped scenario of that
    name (`demo-8gpu.toml`, or `demo-8gpu`), so the names the docs list work from anywhere.
    A file of the user's always wins; anything else is returned unchanged (the caller
    says "no such file")."""
    if given.exists() or given.name != str(given) or given.name in ("", ".", ".."):
        return given
    for name in (given.name, f"{given.name}.toml"):
        shipped = scenarios_dir() / name
        if shipped.is_file():
            return shipped
    return given


def shipped_scenarios() -> list[str]:
    """The scenario files that ship with gputui, by name."""
    return sorted(p.name for p in scenarios_dir().glob("*.toml"))


def default_scenario() -> Path:
    return scenarios_dir() / "demo.toml"
