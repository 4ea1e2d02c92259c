"""`gputui snapshot`: one poll, printed as a compact table or as JSON.

Startup matters here (people run it in loops and scripts), so the top level
imports only argparse and everything else is imported inside `run`; neither
Textual nor pydantic is loaded unless `--json-schema` asks for pydantic.
"""

from __future__ import annotations

import argparse

from gputui.commands import path_arg

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (see telemetry/source.py)
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any


def register(sub: Any) -> None:
    p = sub.add_parser(
        "snapshot",
        help="print one poll of every GPU and its processes",
        description="Print one poll of every GPU and its processes, then exit. "
        "Uses NVML; --demo shows simulated GPUs instead.",
    )
    p.add_argument("--json", action="store_true", help="print the snapshot as JSON")
    p.add_argument(
        "--json-schema",
        action="store_true",
        help="print the JSON Schema of the --json output and exit",
    )
    p.add_argument("--demo", action="store_true", help="use the simulated GPUs instead of NVML")
    p.add_argument(
        "--scenario", type=path_arg, metavar="FILE", help="simulated-GPU scenario TOML (implies --demo)"
    )
    p.add_argument("--prometheus", metavar="URL", help="the whole cluster, read from Prometheus")
    p.add_argument("--match", metavar="SELECTOR", help='with --prometheus: e.g. \'{cluster="a"}\'')
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    import os
    import sys

    if getattr(args, "json_schema", False):
        import json

        from gputui.telemetry.schema import json_schema

        print(json.dumps(json_schema(), indent=2))
        return 0

    # the cluster: telemetry/prometheus_report.py
    if getattr(args, "prometheus", None) or getattr(args, "match", None):
        from gputui.telemetry.prometheus_report import run_snapshot

        return run_snapshot(args)
    from gputui.telemetry.source import Source, SourceUnavailable, open_source

    scenario: Path | None = getattr(args, "scenario", None)
    demo = bool(getattr(args, "demo", False)) or scenario is not None
    as_json = bool(getattr(args, "json", False))
    source: Source
    if demo:
        source, _ = open_source("demo", scenario, with_host=True)
    else:
        try:
            # The text table prints a fraction of what NVML can say (no PCIe, no device
            # facts, no per-process SM%): ask only for that. --json is the full record.
            source, _ = open_source("nvml", with_host=True, detail="full" if as_json else "table")
        except SourceUnavailable as exc:
            print(f"gputui: NVML unavailable: {exc.reason}", file=sys.stderr)
            print("gputui: hint: `gputui snapshot --demo` shows simulated GPUs", file=sys.stderr)
            return 2
    try:
        snap = source.poll()
    finally:
        source.close()

    if as_json:
        from gputui.telemetry.jsonout import snapshot_to_json

        print(snapshot_to_json(snap))
        return 0

    import shutil

    from gputui.telemetry.text_table import render

    tty = sys.stdout.isatty()
    color = tty and not os.environ.get("NO_COLOR")
    width = shutil.get_terminal_size().columns if tty else None
    label = scenario.name if scenario is not None else ("demo.toml" if demo else None)
    sys.stdout.write(render(snap, color=color, width=width, source_label=label))
    return 0
