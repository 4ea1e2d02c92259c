"""`gputui record`: every poll written to a recording, headless, until SIGINT or SIGTERM.

The store is gputui.recording (docs/record.md); this module reads the options, opens the
source as the dashboard does, and runs the loop: poll, write (committed), wait for the
next tick. A full disk or a read-only file ends it with one line and exit 2, everything
written before kept.
"""

from __future__ import annotations

import re

from gputui.commands import add_source_arguments, open_given_source, path_arg

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (see sources/base.py)
if TYPE_CHECKING:
    import argparse
    from pathlib import Path
    from typing import Any

DEFAULT_NAME = "recording.sqlite"
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_DURATION = re.compile(r"([0-9]+(?:\.[0-9]+)?)\s*([smhdw]?)")
MAX_RETENTION_S = 100 * 365 * 86400.0


def parse_duration(text: str, option: str) -> float:
    """`90s`, `30m`, `12h`, `7d`, `2w`, or seconds alone; UserError naming the option."""
    from gputui.core.errors import UserError
    from gputui.core.textsafe import visible

    found = _DURATION.fullmatch(text.strip().lower())
    seconds = float(found[1]) * _UNITS[found[2] or "s"] if found else 0.0
    if not found or not 60 <= seconds <= MAX_RETENTION_S:
        raise UserError(
            f"{option}: {visible(text)!r} is not a duration from 1m to 100 years (e.g. 12h, 7d, 2w)"
        )
    return seconds


def default_path() -> Path:
    """The recording `gputui record` appends to when --out is not given."""
    from pathlib import Path

    import platformdirs

    return Path(platformdirs.user_data_dir("gputui")) / DEFAULT_NAME


def register(sub: Any) -> None:
    p = sub.add_parser(
        "record",
        help="record every poll to an SQLite file, headless (replay it with gputui replay)",
        description=(
            "Poll the GPUs, their processes and the host every --interval and append each "
            "poll to a recording (SQLite, WAL), committed before the next; stops cleanly on "
            "ctrl+c or SIGTERM. Appends to an existing recording. Docs: docs/record.md."
        ),
    )
    p.add_argument(
        "--out",
        type=path_arg,
        metavar="FILE",
        help="the recording (default: recording.sqlite in the user data folder)",
    )
    p.add_argument(
        "--interval", type=float, default=1.0, help="seconds between polls (default 1; 0.1-3600)"
    )
    p.add_argument(
        "--retention",
        metavar="DURATION",
        help="delete polls older than this, e.g. 7d (default: keep everything)",
    )
    add_source_arguments(p, "host")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    import signal
    import sys
    import threading
    import time

    from gputui.core.errors import UserError
    from gputui.core.inputfile import shown
    from gputui.recording.store import Recorder

    interval = float(args.interval)
    if not 0.1 <= interval <= 3600:
        raise UserError(f"--interval: {interval:g} s is out of range (0.1 to 3600)")
    retention = None if args.retention is None else parse_duration(args.retention, "--retention")
    out = args.out
    if out is None:
        out = default_path()
        out.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    if args.source == "replay":
        raise UserError("--source replay: a recording is not recorded again; copy the file")
    if args.scenario is not None:
        from gputui.commands import checked_scenario
        from gputui.core.inputfile import check_option_file

        args.scenario = checked_scenario(args.scenario)
        check_option_file(args.scenario, "--scenario")
    # A size limit (ulimit -f) is a full disk here, one line, not a signal that kills.
    if hasattr(signal, "SIGXFSZ"):
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    # The settings file's alert rules (the defaults without one): their changes are recorded
    # with the polls; a bad rule is one line before anything is written.
    from gputui.alerts.engine import AlertEngine
    from gputui.alerts.rules import load_rules
    from gputui.tui.settings import settings_path

    engine = AlertEngine(load_rules(settings_path(), required=False))
    recorder = Recorder(out, retention_s=retention)
    try:
        source, fallback = open_given_source(args)
    except BaseException:
        recorder.close()
        raise
    stop = threading.Event()

    def _stop(_signum: int, _frame: object) -> None:
        stop.set()

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, _stop)
    if fallback is not None:
        print(f"gputui record: NVML unavailable ({fallback}); recording SIMULATED GPUs",
              file=sys.stderr)  # fmt: skip
    print(
        f"gputui record: recording {source.name} every {interval:g} s to {shown(out)}"
        " (ctrl+c to stop)",
        file=sys.stderr,
        flush=True,
    )
    last_error = None
    try:
        tick = time.monotonic()
        while not stop.is_set():
            try:
                snapshot = source.poll()
            except Exception as exc:  # a source's failure is reported, and polled again
                error = f"{type(exc).__name__}: {exc}"
                if error != last_error:
                    print(f"gputui record: poll failed: {error}", file=sys.stderr, flush=True)
                last_error = error
            else:
                last_error = None
                recorder.write(snapshot, engine.update(snapshot))
            tick += interval
            stop.wait(max(0.0, tick - time.monotonic()))
            if tick < time.monotonic() - interval:  # fell behind (a suspend): no burst
                tick = time.monotonic()
    finally:
        source.close()
        recorder.close()
    print(f"gputui record: {recorder.polls} polls written to {shown(out)}", file=sys.stderr)
    return 0
