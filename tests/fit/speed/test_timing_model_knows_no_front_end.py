"""The roofline's timing model is the core's: it imports neither front-end (the layer
graph, the transformer) nor the models-file parser; the front-ends hand it their ops."""

from __future__ import annotations

import subprocess
import sys

import pytest

FRONT_ENDS = ("gputui.fit.graph", "gputui.fit.transformer", "gputui.fit.importers.modelsfile")


@pytest.mark.parametrize(
    "module", ["gputui.fit.core.roofline", "gputui.fit.core.optimizer_traffic"]
)
def test_timing_model_imports_no_front_end(module: str) -> None:
    code = f"import sys, {module}\nprint('\\n'.join(sorted(sys.modules)))\n"
    loaded = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    pulled = sorted(m for m in loaded if m.startswith(FRONT_ENDS))
    assert not pulled, f"{module} imports {pulled}"
