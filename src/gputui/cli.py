"""The `gputui` entry point.

Kept import-light on purpose: each subcommand lives in `gputui.commands.*`
and imports its heavy dependencies (Textual, pydantic, pynvml) inside `run`,
so `gputui snapshot` starts faster than `nvitop -1`. When the command line
starts with a subcommand's name, only that subcommand's module is imported and
registered (`gputui snapshot` in a loop pays for no fit or catalog options),
and neither `gputui snapshot [--json]` nor the dashboard's common command lines
(`gputui --source nvml --interval 1`) load argparse (`fast_args` in
commands/snapshot.py and commands/tui.py).
"""

from __future__ import annotations

import sys

from gputui import __version__
from gputui.core.errors import UserError
from gputui.core.outstream import run_guarded
from gputui.core.textsafe import visible

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (see sources/base.py)
if TYPE_CHECKING:
    import argparse
    from collections.abc import Sequence
    from types import SimpleNamespace

# In `gputui --help` order; each is gputui.commands.<name> with a register(sub).
COMMANDS = (
    "snapshot", "catalog", "fit", "exporter", "record", "replay", "watch", "report", "check"
)


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole command line; `only`: just that subcommand (same options and help text)."""
    import argparse
    import importlib

    from gputui.commands import tui as tui_cmd

    parser = argparse.ArgumentParser(
        prog="gputui",
        description="Terminal dashboard for NVIDIA GPUs, with a model fit checker.",
    )
    parser.add_argument("--version", action="version", version=f"gputui {__version__}")
    tui_cmd.add_arguments(parser)
    parser.set_defaults(run=tui_cmd.run)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS if only is None else (only,):
        importlib.import_module(f"gputui.commands.{name}").register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    # Every subcommand's stdout goes through one handler: a closed pipe exits 141 quietly,
    # a full disk exits 1 with one line, never a traceback (gputui.core.outstream).
    return run_guarded(lambda: _dispatch(argv))


def _dispatch(argv: Sequence[str] | None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    args: argparse.Namespace | SimpleNamespace | None = None
    if words[:1] == ["snapshot"]:
        from gputui.commands.snapshot import fast_args

        args = fast_args(words)
    else:  # the dashboard's common options (None at a subcommand's name)
        from gputui.commands.tui import fast_args as dashboard_args

        args = dashboard_args(words)
    if args is None and words[:1] == ["report"]:
        from gputui.commands.report import offsets_as_values

        words = offsets_as_values(words)
    if args is None:
        dashes = _dashes_as_value(words)
        if dashes is not None:
            print(f"gputui: {visible(dashes)}: '--' is not a value", file=sys.stderr)
            return 2
        parser = build_parser(words[0]) if words and words[0] in COMMANDS else build_parser()
        args = parser.parse_args(words)
    try:
        return int(args.run(args))
    except UserError as exc:
        # Messages quote file contents and names; whatever a loader forgot, no control
        # character reaches the terminal from here (visible() leaves clean text as it is).
        print(f"gputui: {visible(str(exc))}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return 130


def _dashes_as_value(words: list[str]) -> str | None:
    """The option written `--interval=--`, if any: argparse strips the `--` and hands the
    command an empty list where it promised a value (a float, a path)."""
    for word in words:
        if word == "--":
            return None
        option, eq, value = word.partition("=")
        if eq and value == "--" and option.startswith("-"):
            return option
    return None


if __name__ == "__main__":
    raise SystemExit(main())
