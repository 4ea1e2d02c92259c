"""`gputui catalog` (placeholder until its issue lands)."""

from __future__ import annotations

import argparse
from typing import Any


def register(sub: Any) -> None:
    p = sub.add_parser("catalog", help="catalog (not yet implemented)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    print("gputui catalog: not implemented yet")
    return 2
