"""`gputui snapshot`: one poll, printed as a compact table or as JSON.

Startup matters here (people run it in loops and scripts), so the top level
imports nothing heavy and everything else is imported inside `run`; neither
Textual nor pydantic is loaded unless `--json-schema` asks for pydantic.
`fast_args` spares the commonest command lines argparse (see there).
"""

from __future__ import annotations

from gputui.commands import path_arg
from gputui.commands.tui import FAST_DEFAULTS

GPU_TABLE_MAX = 64  # render/cluster_text.py's: the text GPU table without --all
# Exit status when a GPU is lost (failed): the snapshot is printed, but it is not the whole
# machine; as `gputui fit` answers in part (commands/fit/args.py EXIT_PARTIAL).
EXIT_LOST = 3
# The window a one-shot poll measures CPU over (host and processes): ten clock ticks at
# Linux's usual 100 Hz, the least that gives a process's share a meaning.
CPU_WINDOW_S = 0.1

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (see sources/base.py)
if TYPE_CHECKING:
    import argparse
    from pathlib import Path
    from types import SimpleNamespace
    from typing import Any

    Args = argparse.Namespace | SimpleNamespace


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
        "--scenario",
        type=path_arg,
        metavar="FILE",
        help="simulated-GPU scenario TOML (implies --demo)",
    )
    p.add_argument("--prometheus", metavar="URL", help="the whole cluster, read from Prometheus")
    p.add_argument("--match", metavar="SELECTOR", help="with --prometheus: e.g. '{cluster=\"a\"}'")
    p.add_argument(
        "--deadline",
        metavar="SECONDS",
        help="with --prometheus: the time all the queries of the command may take together "
        "(default 60)",
    )
    p.add_argument(
        "--all",
        action="store_true",
        help="with --prometheus: the GPU table lists every GPU "
        f"(by default only for fleets of up to {GPU_TABLE_MAX} GPUs; larger ones get a per-card summary)",
    )
    p.set_defaults(run=run)


# The flags (no value, no abbreviation) `fast_args` reads itself, with their attribute.
FAST_FLAGS = {"--json": "json", "--json-schema": "json_schema", "--demo": "demo"}
# What argparse sets for `gputui snapshot` alone: the dashboard's top-level options'
# defaults (commands/tui.py), overridden by this subcommand's (register above).
# tests/core/test_cli_fast_path.py checks both against argparse's namespace.
_FAST_DEFAULTS: dict[str, object] = {
    **FAST_DEFAULTS,
    "command": "snapshot",
    "json": False,
    "json_schema": False,
    "demo": False,
    "all": False,
    "deadline": None,
}


def fast_args(words: list[str]) -> SimpleNamespace | None:
    """The parsed command line for `snapshot` followed only by FAST_FLAGS, else None.

    argparse costs ~4 ms of CPU (its import with gettext, building the parser),
    a twentieth of the whole `gputui snapshot`, to read `snapshot --json`. This
    reads exactly those forms, with argparse's result; anything else (a value,
    an abbreviation, --help, a typo) returns None and goes to argparse, which
    parses it or reports the error as always.
    """
    if not words or words[0] != "snapshot" or not all(w in FAST_FLAGS for w in words[1:]):
        return None
    from types import SimpleNamespace

    values = dict(_FAST_DEFAULTS, run=run)
    for word in words[1:]:
        values[FAST_FLAGS[word]] = True
    return SimpleNamespace(**values)


def run(args: Args) -> int:
    import os
    import sys

    if getattr(args, "json_schema", False):
        import json

        from gputui.model.schema import json_schema

        print(json.dumps(json_schema(), indent=2))
        return 0

    if getattr(args, "prometheus", None) is not None or getattr(args, "match", None) is not None:
        return _run_cluster(args)
    for flag, attr in (("--all", "all"), ("--deadline", "deadline")):
        if getattr(args, attr, None) not in (None, False):
            from gputui.core.errors import UserError

            what = " (it lists every GPU of the fleet)" if attr == "all" else ""
            raise UserError(f"{flag}: only with --prometheus URL{what}")
    from gputui.sources.base import Source, open_source
    from gputui.sources.errors import SourceUnavailable

    scenario: Path | None = getattr(args, "scenario", None)
    if scenario is not None:
        from gputui.commands import checked_scenario

        scenario = checked_scenario(scenario)
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
        again = getattr(source, "host_again", None)
        gpm_pending = bool(getattr(source, "gpm_pending", False))
        if callable(again) and (_cpu_unknown(snap) or gpm_pending):
            import time

            time.sleep(CPU_WINDOW_S)
            snap = again(snap)
    finally:
        source.close()
    status = EXIT_LOST if any(d.failed is not None for d in snap.devices) else 0

    if as_json:
        from gputui.model.snapshot_encode import snapshot_to_json

        print(snapshot_to_json(snap))
        return status

    import shutil

    from gputui.render.snapshot_text import render
    from gputui.sources.host.exited import exited_pids

    tty = sys.stdout.isatty()
    color = tty and not os.environ.get("NO_COLOR")
    width = shutil.get_terminal_size().columns if tty else None
    label = scenario.name if scenario is not None else ("demo.toml" if demo else None)
    text = render(snap, color=color, width=width, source_label=label, exited=exited_pids(snap))
    sys.stdout.write(text)
    return status


def _cpu_unknown(snap: Any) -> bool:
    """The host's or a visible process's CPU is unknown: the poll's counters covered no time."""
    host = snap.host
    if host is not None and host.cpu_percent is None:
        return True
    return any(p.host_visible and p.cpu_percent is None for p in snap.processes)


def _run_cluster(args: Args) -> int:
    """`gputui snapshot --prometheus URL [--match SELECTOR] [--json] [--all]`:
    render/cluster_text.py. The text shows a few fields of each GPU, so only their series
    are queried; --json is the full record."""
    import sys

    from gputui.render.cluster_text import TEXT_METRICS, cluster_json_text, render_cluster
    from gputui.sources.prometheus.connect import (
        check_cluster_args,
        command_deadline,
        open_cluster_source,
        poll_or_fail,
    )

    check_cluster_args(args, {"demo": "--demo", "scenario": "--scenario"})
    as_json = bool(getattr(args, "json", False))
    metrics = None if as_json else TEXT_METRICS
    deadline = command_deadline(getattr(args, "deadline", None))
    source = open_cluster_source(args.prometheus, getattr(args, "match", None), metrics, deadline)
    cluster = poll_or_fail(source)
    if as_json:
        print(cluster_json_text(cluster))
    else:
        sys.stdout.write(render_cluster(cluster, every=bool(getattr(args, "all", False))))
    return EXIT_LOST if any(not g.up for g in cluster.gpus) else 0
