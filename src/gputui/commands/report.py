"""`gputui report FILE`: what a recorded run used, per GPU and per process, with plots.

The recording is read through `open_run` (the one place that knows the recording
store) as a stream of snapshots; the statistics are `gputui.usage`'s. Exports go
through core/userfile: a file gputui did not write is never replaced.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gputui.commands import path_arg

if TYPE_CHECKING:
    from gputui.recording.reader import Recording

MAX_PID = 1 << 22  # Linux's PID limit
# A recording is opened by the store's own reader, which checks what it holds; this is
# only the size past which the name cannot be a recording at all.
MAX_RECORDING_BYTES = 1 << 40


def register(sub: Any) -> None:
    p = sub.add_parser(
        "report",
        help="what a recorded run used: utilisation, memory, energy, throttling, per process",
        description=(
            "Summarise a recording (gputui record): per GPU utilisation percentiles, memory "
            "peak, energy from integrated power and time throttled by reason; per process "
            "start, end, peak GPU memory, mean SM % and energy share; plots of utilisation, "
            "memory, power and temperature over time (with the plots extra). Docs: "
            "docs/record.md."
        ),
    )
    p.add_argument("file", type=path_arg, metavar="FILE", help="a recording")
    p.add_argument(
        "--since",
        metavar="T",
        help="from this time: ISO (2026-12-07T10:00, local time without an offset) or an "
        "offset from the recording's end (-2h, -1h30m) or start (+30m)",
    )
    p.add_argument("--until", metavar="T", help="up to this time (as --since)")
    p.add_argument("--pid", metavar="PID", help="only this process, on its GPUs, while it ran")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument("--csv", type=path_arg, metavar="OUT", help="write every GPU sample as CSV")
    p.add_argument(
        "--parquet",
        type=path_arg,
        metavar="OUT",
        help="write every GPU sample as Parquet (needs pip install 'gputui[parquet]')",
    )
    p.add_argument("--no-plots", action="store_true", help="tables only")
    p.set_defaults(run=run)


def open_run(path: Path) -> Recording:
    """The recording at `path`, by the recording store's reader (`gputui.recording`):
    `.span()` (None when empty), `.snapshots(since, until)`, `.alerts(since, until)`,
    `.meta`; a file that is not one is its one-line error (RecordingError, a UserError)."""
    from gputui.recording.reader import open_recording

    return open_recording(path)


def offsets_as_values(words: list[str]) -> list[str]:
    """`--since -2h` as `--since=-2h`: argparse takes a word starting with `-` for an
    option (only a negative number passes), so an offset would be "expected one argument"."""
    import re

    out: list[str] = []
    for i, word in enumerate(words):
        if (
            i > 0
            and words[i - 1] in ("--since", "--until")
            and re.fullmatch(r"-[0-9][0-9.smhdw]*", word)
        ):
            out[-1] = f"{words[i - 1]}={word}"
        else:
            out.append(word)
    return out


def parse_pid(text: str | None) -> int | None:
    from gputui.core.errors import UserError
    from gputui.core.textsafe import visible

    if text is None:
        return None
    digits = text.strip()
    # isdigit() admits other scripts' digits and int() refuses past 4,300 of them: bounded
    # to ASCII and to the digits a PID can have before int() is asked
    if not (digits.isascii() and digits.isdigit() and len(digits) <= 7) or not (
        1 <= int(digits) <= MAX_PID
    ):
        raise UserError(f"--pid: {visible(text)[:40]!r} is not a process id (1 to {MAX_PID})")
    return int(digits)


def run(args: argparse.Namespace) -> int:
    import sys

    from gputui.core.errors import UserError
    from gputui.core.inputfile import check_option_file
    from gputui.core.quantities import parse_when
    from gputui.usage.export import PARQUET_HINT, SampleRows, parquet_available

    pid = parse_pid(args.pid)
    _check_outputs(args)  # before anything is read: a file that is not gputui's is refused
    if args.parquet is not None and not parquet_available():
        raise UserError(PARQUET_HINT)
    check_option_file(args.file, "FILE", cap=MAX_RECORDING_BYTES)
    recording = open_run(args.file)
    span = recording.span()  # None: a recording without polls (its report says so)
    if span is None:
        import time

        span = (time.time(), time.time())
    start, end = span
    since = None if args.since is None else parse_when(args.since, "--since", start=start, end=end)
    until = None if args.until is None else parse_when(args.until, "--until", start=start, end=end)
    if since is not None and until is not None and since > until:
        raise UserError("--since: after --until")
    gpus = None
    if pid is not None:
        since, until, gpus = lifetime(recording, pid, since, until)
    rows = SampleRows(gpus) if args.csv is not None or args.parquet is not None else None
    from gputui.usage.summary import summarise

    summary = summarise(
        recording.snapshots(since=since, until=until),
        interval_s=_interval(recording),
        pid=pid,
        gpus=gpus,
        on_snapshot=None if rows is None else rows.add,
    )
    if rows is not None:
        _export(args, rows.rows)
    alerts = _alerts(recording, summary.start, summary.end, pid, gpus)
    if args.json:
        import json

        from gputui.usage.report_json import report_document

        print(json.dumps(report_document(summary, pid=pid, alerts=alerts), indent=2))
        return 0
    from gputui.usage.report_text import render_text

    sys.stdout.write(render_text(summary, alerts))
    if not args.no_plots and summary.start is not None:
        sys.stdout.write("\n" + _plots(summary))
    return 0


def _alerts(
    recording: Any, since: float | None, until: float | None, pid: int | None,
    gpus: frozenset[int] | None,
) -> list[Any] | None:  # fmt: skip
    """The recording's alert changes over the report's span; with --pid, those of that
    process, of its GPUs and of the host. None when the recording keeps no alerts."""
    read = getattr(recording, "alerts", None)
    if not callable(read) or since is None:
        return None
    changes = list(read(since=since, until=until))
    if pid is None:
        return changes

    def mine(a: Any) -> bool:
        if a.pid is not None:
            return bool(a.pid == pid)
        gpu = None if a.gpu is None else a.gpu.split(":")[0]
        return gpu is None or (gpu.isdigit() and gpus is not None and int(gpu) in gpus)

    return [a for a in changes if mine(a)]


def _interval(recording: Any) -> float | None:
    """The polling interval the recording says it used, if it says (else it is measured)."""
    meta = getattr(recording, "meta", None)
    value = meta.get("interval_s") if isinstance(meta, dict) else None
    if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value <= 86400:
        return float(value)
    return None


def lifetime(
    recording: Any, pid: int, since: float | None, until: float | None
) -> tuple[float, float, frozenset[int]]:
    """When `pid` was seen in the range and on which GPUs (a first pass over it)."""
    from gputui.core.errors import UserError

    first = last = None
    gpus: set[int] = set()
    for snap in recording.snapshots(since=since, until=until):
        mine = [p.gpu_index for p in snap.processes if p.pid == pid]
        if mine:
            first = snap.timestamp if first is None else first
            last = snap.timestamp
            gpus.update(mine)
    if first is None or last is None:
        raise UserError(f"--pid: no process {pid} in the recording's range", exit_code=1)
    return first, last, frozenset(gpus)


def _plots(summary: Any) -> str:
    import os
    import shutil
    import sys

    from gputui.usage.plots import INSTALL_HINT, plots_available, render_plots

    if not plots_available():
        return INSTALL_HINT + "\n"
    tty = sys.stdout.isatty()
    width = min(160, shutil.get_terminal_size().columns) if tty else 100
    return render_plots(summary, width=width, color=tty and not os.environ.get("NO_COLOR"))


def _check_outputs(args: argparse.Namespace) -> None:
    """--csv/--parquet: nothing there yet, or a file an earlier export wrote (read by its
    first and last bytes); anything else is one line now, not after the report's work."""
    from gputui.core import pathprobe
    from gputui.core.errors import UserError
    from gputui.core.inputfile import open_regular, shown
    from gputui.usage import export

    for option, path, ours in (
        ("--csv", args.csv, export.csv_ends_ours),
        ("--parquet", args.parquet, export.parquet_ends_ours),
    ):
        if path is None or not pathprobe.present(path):
            continue
        try:
            with open_regular(path) as handle:
                head = handle.read(len(export.CSV_HEADER))
                handle.seek(0, 2)
                handle.seek(max(0, handle.tell() - export.TAIL_BYTES))
                tail = handle.read(export.TAIL_BYTES)
        except UserError as exc:
            raise UserError(f"{option}: {exc}; left as it is") from None
        except OSError as exc:
            raise UserError(f"{option}: {shown(path)}: {exc.strerror or exc}") from None
        if not ours(head, tail):
            raise UserError(f"{option}: {shown(path)}: not a file gputui wrote; left as it is")


def _export(args: argparse.Namespace, rows: list[Any]) -> None:
    from gputui.core.errors import UserError
    from gputui.core.inputfile import shown
    from gputui.core.userfile import replace_file
    from gputui.usage import export

    writes = []
    if args.csv is not None:
        writes.append(("--csv", args.csv, export.csv_bytes, export.csv_is_ours))
    if args.parquet is not None:
        writes.append(("--parquet", args.parquet, export.parquet_bytes, export.parquet_is_ours))
    for option, path, encode, ours in writes:
        try:
            replace_file(path, encode(rows), new_mode=0o644, may_replace=ours)
        except OSError as exc:
            reason = exc.strerror or str(exc)
            raise UserError(f"{option}: {shown(path)}: not written: {reason}") from None
