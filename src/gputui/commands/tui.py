"""`gputui` with no subcommand: the live dashboard."""

from __future__ import annotations

import argparse
import sys

from gputui.commands import path_arg


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--source",
        choices=["auto", "nvml", "demo"],
        default="auto",
        help="auto: NVML when it works, else simulated GPUs (with a banner); nvml insists",
    )
    parser.add_argument("--demo", action="store_true", help="same as --source demo")
    parser.add_argument("--scenario", type=path_arg, help="simulated-GPU scenario TOML file")
    parser.add_argument(
        "--interval", type=float, default=1.0, help="refresh interval in seconds (default 1)"
    )
    parser.add_argument(
        "--readonly", action="store_true", help="hide every action that changes the system"
    )
    parser.add_argument(
        "--prometheus", metavar="URL", help="the cluster view: every GPU a Prometheus server holds"
    )
    parser.add_argument(
        "--match", metavar="SELECTOR", help='with --prometheus: only these series, e.g. \'{job="gpu"}\''
    )


def run(args: argparse.Namespace) -> int:
    from gputui.errors import UserError
    from gputui.telemetry.source import SourceKind, SourceUnavailable, open_source

    interval = float(args.interval)
    if not 0.1 <= interval <= 3600:
        raise UserError(f"--interval: {interval:g} s is out of range (0.1 to 3600)")
    # the cluster view: tui/cluster_app.py
    if getattr(args, "prometheus", None) or getattr(args, "match", None):
        from gputui.tui.cluster_app import run_cluster

        return run_cluster(args, interval)
    kind: SourceKind = "demo" if args.demo else args.source
    if args.scenario is not None and not args.scenario.is_file():
        raise UserError(f"--scenario: {args.scenario}: no such file")
    try:
        source, fallback_reason = open_source(kind, args.scenario)
    except SourceUnavailable as exc:
        raise UserError(f"NVML is not usable: {exc.reason}") from None
    except (OSError, ValueError) as exc:  # a scenario file the simulator could not read
        raise UserError(str(exc)) from None

    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        # Textual reads keys from stdin: at end-of-file its input thread would spin.
        source.close()
        raise UserError(
            "the dashboard needs a terminal on stdin and stdout; "
            "for a one-shot listing use `gputui snapshot`"
        )

    from gputui.catalog.loader import validate_in_child
    from gputui.tui.run import run_dashboard

    # The dashboard only reads the catalog: a cache miss is validated by a child
    # process, so pydantic never loads into this long-lived one (catalog/loader.py).
    validate_in_child()

    return run_dashboard(
        source,
        fallback_reason=fallback_reason,
        interval=interval,
        readonly=bool(args.readonly),
    )
