"""Skip a test module without torch, unless CI asks for torch (GPUTUI_REQUIRE_TORCH=1):
there a missing torch fails the module instead, so CI cannot pass with the PyTorch
front-end's tests silently skipped."""

from __future__ import annotations

import importlib.util
import os

import pytest


def require_torch() -> None:
    """Call at a test module's top: skip it without torch, or fail where CI requires torch."""
    if importlib.util.find_spec("torch") is not None:
        return
    if os.environ.get("GPUTUI_REQUIRE_TORCH") == "1":
        pytest.fail(
            "GPUTUI_REQUIRE_TORCH=1 but torch is not installed: pip install 'gputui[torch]'",
            pytrace=False,
        )
    pytest.skip("torch is not installed (pip install 'gputui[torch]')", allow_module_level=True)
