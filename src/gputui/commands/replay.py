"""`gputui replay FILE`: the dashboard driven by a recording, with a time bar (tui/replay_app.py)."""

from __future__ import annotations

from gputui.commands import path_arg

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (see sources/base.py)
if TYPE_CHECKING:
    import argparse
    from typing import Any


def register(sub: Any) -> None:
    p = sub.add_parser(
        "replay",
        help="replay a recording in the dashboard, with a time bar (pause, step, speed, jump)",
        description=(
            "Open the dashboard on a recording made by `gputui record` or `gputui --record`: "
            "the same panels, tables and details, plus a time bar. Keys: space pause/play, "
            ". and , step, x speed (x1, x10, x60), g jump to a time, n and b the next and "
            "previous alert. Docs: docs/record.md."
        ),
    )
    p.add_argument("file", type=path_arg, metavar="FILE", help="the recording")
    p.add_argument(
        "--speed", type=float, choices=(1.0, 10.0, 60.0), default=1.0,
        help="replay speed to start at (default 1)",
    )  # fmt: skip
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    import sys

    from gputui.core.errors import UserError
    from gputui.recording.reader import open_recording
    from gputui.sources.errors import SourceUnavailable
    from gputui.sources.replay.source import ReplaySource

    recording = open_recording(args.file)
    try:
        alerts = recording.alerts()
        times = recording.times()
        source = ReplaySource(recording, speed=float(args.speed))
    except SourceUnavailable as exc:
        raise UserError(exc.reason) from None
    except BaseException:
        recording.close()
        raise
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        source.close()
        raise UserError("the replay needs a terminal on stdin and stdout")
    from gputui.tui.replay_app import ReplayApp
    from gputui.tui.run import EXIT_WATCHDOG_S, leave, run_in_terminal

    app = ReplayApp(
        source,
        alerts=alerts,
        times=times,
        watch_terminal=True,
        exit_watchdog_s=EXIT_WATCHDOG_S,
        catalog_in_child=True,
    )
    try:
        code = run_in_terminal(app)
    finally:
        if not app.poll_in_flight:
            source.close()
    leave(code)
