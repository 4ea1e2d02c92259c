"""The NVML path stays light: no Textual (UI thread rule), no pydantic, no psutil until host data is wanted."""

from __future__ import annotations

import subprocess
import sys


def test_nvml_modules_import_nothing_heavy():
    code = (
        "import sys, gputui.telemetry.nvml, gputui.telemetry.nvml_query, "
        "gputui.telemetry.nvml_procs, gputui.telemetry.nvml_pcie\n"
        "print(sorted(m for m in ('textual', 'pydantic', 'psutil') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
