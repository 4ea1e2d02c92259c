"""`gputui` with no subcommand: the live dashboard."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--source",
        choices=["auto", "nvml", "demo"],
        default="auto",
        help="auto: NVML when it works, else simulated GPUs (with a banner); nvml insists",
    )
    parser.add_argument("--demo", action="store_true", help="same as --source demo")
    parser.add_argument("--scenario", type=Path, help="simulated-GPU scenario TOML file")
    parser.add_argument(
        "--interval", type=float, default=1.0, help="refresh interval in seconds (default 1)"
    )
    parser.add_argument(
        "--readonly", action="store_true", help="hide every action that changes the system"
    )


def run(args: argparse.Namespace) -> int:
    from gputui.commands.snapshot import run as snapshot_run

    # Until the TUI lands, show the snapshot.
    args.json = False
    return snapshot_run(args)
