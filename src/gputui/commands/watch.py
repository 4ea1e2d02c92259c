"""`gputui watch --alerts [RULES_FILE]`: headless alerting, one JSON line per alert change.

Polls a source, runs the alert engine (gputui.alerts) on each snapshot and prints each
change as `AlertChange.to_json()`, one line, flushed: for a log, `jq`, or a pipe into
another tool. `--exec` and `--webhook` (watch_notify.py) send each change on as well.
A closed or full stdout ends the command with core/outstream's one line, no traceback.

RULES_FILE holds the rules' tables under `[alerts]` (docs/alerts.md); without one, the dashboard's
settings file (`settings.toml`) is read when it exists, else the defaults apply.
"""

from __future__ import annotations

from gputui.commands import add_source_arguments, open_given_source, path_arg

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (see sources/base.py)
if TYPE_CHECKING:
    import argparse
    from typing import Any

    from gputui.model.alert import AlertChange

SETTINGS = object()  # --alerts given without a file: the settings file


def register(sub: Any) -> None:
    p = sub.add_parser(
        "watch",
        help="watch the GPUs headless and print one JSON line per alert change",
        description="Poll the GPUs, run the alert rules (docs/alerts.md) and print each "
        "alert that fires or clears as one JSON line.",
    )
    p.add_argument(
        "--alerts",
        nargs="?",
        const=SETTINGS,
        type=path_arg,
        metavar="RULES_FILE",
        help="watch the alert rules: RULES_FILE's [alerts] tables, else the settings "
        "file's, else the defaults",
    )
    add_source_arguments(p, "host")
    p.add_argument(
        "--interval", type=float, default=1.0, help="seconds between polls (default 1; 0.1-3600)"
    )
    p.add_argument("--polls", type=int, metavar="N", help="stop after N polls (default: never)")
    p.add_argument(
        "--exec",
        dest="exec_command",
        metavar="CMD",
        help="run CMD for each change (no shell: split into words), the alert in "
        "GPUTUI_ALERT_* variables and as JSON on stdin",
    )
    p.add_argument(
        "--exec-timeout", type=float, default=10.0, metavar="S",
        help="kill the --exec command after S seconds (default 10)",
    )  # fmt: skip
    p.add_argument("--webhook", metavar="URL", help="POST each change's JSON to URL")
    p.add_argument(
        "--webhook-timeout", type=float, default=5.0, metavar="S",
        help="give up on the webhook after S seconds (default 5)",
    )  # fmt: skip
    p.set_defaults(run=run)


def _bounded(value: float, option: str, low: float, high: float) -> float:
    from gputui.core.errors import UserError

    if not low <= value <= high:  # NaN fails too
        raise UserError(f"{option}: {value:g} is out of range ({low:g} to {high:g})")
    return value


def _rules(given: object) -> Any:
    from pathlib import Path

    from gputui.alerts.rules import load_rules
    from gputui.core.inputfile import check_option_file

    if given is SETTINGS:
        from gputui.tui.settings import settings_path

        return load_rules(settings_path(), required=False)
    assert isinstance(given, Path)
    check_option_file(given, "--alerts")
    return load_rules(given, required=True)


def run(args: argparse.Namespace) -> int:
    import sys
    import time

    from gputui.alerts.engine import AlertEngine
    from gputui.commands.watch_notify import exec_argv, webhook_url
    from gputui.core.errors import UserError

    if args.alerts is None:
        raise UserError("watch: say what to watch: --alerts [RULES_FILE]")
    interval = _bounded(args.interval, "--interval", 0.1, 3600)
    if args.polls is not None and args.polls < 1:
        raise UserError(f"--polls: {args.polls} is not a number of polls (1 or more)")
    argv = exec_argv(args.exec_command) if args.exec_command is not None else None
    exec_timeout = _bounded(args.exec_timeout, "--exec-timeout", 0.1, 600)
    url = webhook_url(args.webhook) if args.webhook is not None else None
    webhook_timeout = _bounded(args.webhook_timeout, "--webhook-timeout", 0.1, 120)
    engine = AlertEngine(_rules(args.alerts))
    if args.scenario is not None:
        from gputui.commands import checked_scenario

        args.scenario = checked_scenario(args.scenario)
    source, fallback = open_given_source(args)
    if fallback is not None:
        print(f"gputui watch: NVML unavailable ({fallback}); watching SIMULATED GPUs",
              file=sys.stderr)  # fmt: skip
    try:
        polls = 0
        while args.polls is None or polls < args.polls:
            started = time.monotonic()
            for change in engine.update(source.poll()):
                _send(change, argv, exec_timeout, url, webhook_timeout)
            if polls == 0:  # said once, of the GPUs the first poll found
                for note in engine.notes():
                    print(f"gputui watch: {note}", file=sys.stderr)
            polls += 1
            if args.polls is None or polls < args.polls:
                time.sleep(max(0.0, interval - (time.monotonic() - started)))
    finally:
        source.close()
    return 0


def _send(
    change: AlertChange,
    argv: list[str] | None,
    exec_timeout: float,
    url: str | None,
    webhook_timeout: float,
) -> None:
    """Print the change (flushed: a closed pipe ends the command here), then pass it on."""
    import json
    import sys

    from gputui.commands.watch_notify import post_webhook, run_exec
    from gputui.core.outstream import flush

    print(json.dumps(change.to_json(), allow_nan=False))
    flush()
    if argv is not None:
        problem = run_exec(argv, change, exec_timeout)
        if problem is not None:
            print(f"gputui watch: --exec: {problem}", file=sys.stderr)
    if url is not None:
        problem = post_webhook(url, change, webhook_timeout)
        if problem is not None:
            print(f"gputui watch: --webhook: {problem}", file=sys.stderr)
