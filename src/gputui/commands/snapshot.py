"""`gputui snapshot`: one poll, printed as a table or JSON (placeholder; owned by the telemetry work)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any


def register(sub: Any) -> None:
    p = sub.add_parser("snapshot", help="print one poll of every GPU and its processes")
    p.add_argument("--json", action="store_true", help="print the snapshot as JSON")
    p.add_argument("--demo", action="store_true", help="use the simulated GPUs instead of NVML")
    p.add_argument("--scenario", type=Path, help="simulated-GPU scenario TOML file")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    print("gputui snapshot: not implemented yet")
    return 2
