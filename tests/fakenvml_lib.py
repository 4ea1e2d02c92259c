"""Where the simulated NVML library's sources are (../shared/fakenvml beside the checkout, or
FAKENVML_DIR), and the marks of a test that builds it: one place, so a test moved to another
folder cannot lose its way to the sources and skip unnoticed."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

FAKE = Path(
    os.environ.get(
        "FAKENVML_DIR", Path(__file__).resolve().parents[1] / ".." / "shared" / "fakenvml"
    )
)

NEEDS_FAKE = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc to build the fake NVML"),
    pytest.mark.skipif(
        not (FAKE / "fakenvml.c").is_file(), reason=f"no fake NVML sources at {FAKE}"
    ),
]


def build_fake(*make_args: str) -> None:
    """Build the fake library with these make arguments (`f"BUILD={folder}"`, or
    `"variant", f"VARIANT_DIR={folder}", f"HIDE={symbols}"`): one way every test builds it."""
    import subprocess

    subprocess.run(
        ["make", "-s", "-C", str(FAKE), *make_args], check=True, capture_output=True, timeout=120
    )
