"""Data files must load from an installed wheel as well as from this checkout."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from gputui.core import resources

REPO = Path(__file__).resolve().parents[2]


def test_checkout_finds_repo_catalog() -> None:
    # The editable install has no packaged copy, so it must use the top-level folder.
    assert resources.catalog_dir() == REPO / "catalog"
    assert resources.default_scenario().is_file()


@pytest.mark.slow
def test_wheel_carries_catalog_and_scenarios(tmp_path: Path) -> None:
    wheel_dir = tmp_path / "wheel"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(wheel_dir),
            str(REPO),
        ],
        check=True,
        capture_output=True,
    )
    (wheel,) = wheel_dir.glob("gputui-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "gputui/_data/catalog/architectures.toml" in names
    assert any(n.startswith("gputui/_data/catalog/cards/") for n in names)
    assert "gputui/sources/simulated/scenarios/demo.toml" in names
    assert "gputui/alerts/xid.toml" in names
    assert "gputui/_data/examples/models.toml" in names
    assert any(n.startswith("gputui/_data/examples/llm/") for n in names)

    # Unpacked, the wheel is the installed layout. Run from an unrelated directory,
    # with the unpacked copy first on the path, and check it uses its own data.
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    code = (
        "import gputui, gputui.core.resources as r\n"
        "from gputui.catalog import load_catalog\n"
        "from gputui.sources.simulated.source import SimulatedSource\n"
        "print(gputui.__file__)\n"
        "print(r.catalog_dir())\n"
        "print(len(load_catalog().cards))\n"
        "print(len(SimulatedSource.from_scenario(None, clock=lambda: 5.0).poll().devices))\n"
        "from gputui.fit.paths import shipped_examples\n"
        "print(shipped_examples())\n"
        "from gputui.alerts.xid import describe_xid\n"
        "print(describe_xid(79)[1])\n"
    )
    env = {**os.environ, "PYTHONPATH": str(site)}
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split("\n")
    assert out[0].startswith(str(site))
    assert out[1] == str(site / "gputui" / "_data" / "catalog")
    assert int(out[2]) > 20
    assert int(out[3]) >= 2
    assert out[4] == str(site / "gputui" / "_data" / "examples" / "models.toml")
    assert out[5] == "reboot_node"  # the XID meanings read from the wheel's own copy
