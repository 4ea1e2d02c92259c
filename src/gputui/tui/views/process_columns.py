"""The process table's columns: what each shows, how it sorts, which give way first.

Free of Textual, so the table (process_table.py), the command palette's sort
entries and the tests share one definition.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from gputui.model.mig import process_mig_label
from gputui.model.snapshot import GpuProcess
from gputui.tui.views import formatting as fmt
from gputui.tui.views.table_columns import Column as TableColumn

COMMAND_WIDTH = 40  # before the first resize; then whatever the terminal leaves
COMMAND_MIN = 16  # below this, lower-priority columns give way to the command
COMMAND_SHARE = 0.39  # of the width: what the command wants before low-priority columns stay
_CMD_MAX = 400


Column = TableColumn[GpuProcess]


def gpu_cell(p: GpuProcess) -> str:
    """ "0", or "0:2" (GPU index : MIG device index, model/mig.py) in a MIG device."""
    return process_mig_label(p)


def _short_type(t: str) -> str:
    return {"compute": "C", "graphics": "G", "compute+graphics": "C+G", "mps": "MPS"}.get(t, t)


# An interpreter named by its path says the path, not the program: as nvitop shows it,
# `$HOME/.pyenv/versions/3.11.7/bin/python3 train.py` reads `python3 train.py` (the
# details line under the table and the process dialog keep the whole command line).
_INTERPRETER = re.compile(
    r"(python|pypy|ipython|jupyter|node|deno|bun|ruby|perl|php|julia|Rscript|R|java|lua"
    r"|bash|sh|zsh|dash|fish)[0-9.]*[mwt]?"
)


def short_command(p: GpuProcess) -> str | None:
    """The command with an interpreter's path cut to its name."""
    args = p.cmdline
    if args and "/" in args[0]:
        name = args[0].rsplit("/", 1)[1]
        if _INTERPRETER.fullmatch(name):
            return " ".join((name, *args[1:]))
    return p.command


def _command(p: GpuProcess) -> str:
    cmd = short_command(p)
    if cmd is None:
        return fmt.NA
    return cmd if len(cmd) <= _CMD_MAX else cmd[: _CMD_MAX - 1] + "…"


def _pct(v: float | int | None) -> str:
    return fmt.NA if v is None else f"{v:.0f}"


# `drop`: on a narrow terminal Container, Host mem, GMBW% and Type give way first (as in
# nvitop and nvtop, the command stays, abbreviated), then CPU%, Time and SM%.
COLUMNS: tuple[Column, ...] = (
    Column(
        "gpu",
        "GPU",
        lambda p: gpu_cell(p),
        lambda p: (p.gpu_index, -1 if p.mig_index is None else p.mig_index),
        True,
        3,
    ),
    Column("pid", "PID", lambda p: str(p.pid), lambda p: p.pid, right=True, width=7),
    Column(
        "container",
        "Container",
        lambda p: p.container or "",
        lambda p: p.container,
        width=14,
        drop=1,
        hide_empty=True,
    ),
    Column("user", "User", lambda p: p.user or fmt.NA, lambda p: p.user, width=10),
    Column("type", "Type", lambda p: _short_type(p.type), lambda p: p.type, width=4, drop=4),
    Column("gpu_mem", "GPU mem", lambda p: fmt.size(p.gpu_memory), lambda p: p.gpu_memory, True, 9),
    Column("sm", "SM%", lambda p: _pct(p.sm_util), lambda p: p.sm_util, True, width=4, drop=7),
    # nvitop's %GMBW: the process's share of the memory bandwidth (NVML's memory utilization).
    Column("gmbw", "GMBW%", lambda p: _pct(p.mem_util), lambda p: p.mem_util, True, 5, drop=3),
    Column("cpu", "CPU%", lambda p: _pct(p.cpu_percent), lambda p: p.cpu_percent, True, 5, drop=5),
    Column("host_mem", "Host mem", lambda p: fmt.size(p.rss), lambda p: p.rss, True, 9, drop=2),
    Column(
        "time", "Time", lambda p: fmt.duration(p.running_s), lambda p: p.running_s, True, 8, drop=6
    ),
    Column("command", "Command", _command, lambda p: p.command),
)
COLUMN_KEYS = tuple(c.key for c in COLUMNS)
BY_KEY = {c.key: c for c in COLUMNS}


def visible_columns(
    width: int, padding: int = 1, hidden: frozenset[str] = frozenset()
) -> tuple[Column, ...]:
    """The columns that fit in `width` cells and leave the command its share of the width
    (COMMAND_SHARE, at least COMMAND_MIN); `hidden` columns (empty on every row) never show."""
    shown = [c for c in COLUMNS if c.key not in hidden]
    want = max(COMMAND_MIN, int(width * COMMAND_SHARE))
    for victim in sorted((c for c in shown if c.drop), key=lambda c: c.drop):
        fixed = sum(c.room + 2 * padding for c in shown if c.width) + 2 * padding + 1
        if width - fixed >= want:
            break
        shown.remove(victim)
    return tuple(shown)


def empty_columns(processes: Sequence[GpuProcess]) -> frozenset[str]:
    """The hide_empty columns no process has a value in."""
    return frozenset(
        c.key for c in COLUMNS if c.hide_empty and not any(c.cell(p) for p in processes)
    )


def row_key(p: GpuProcess) -> str:
    """A PID can hold contexts on several GPUs: one row per (GPU, PID)."""
    return f"{p.gpu_index}:{p.pid}"


def matches(p: GpuProcess, needle: str) -> bool:
    """Case-insensitive substring match over what the user can see in the row."""
    if not needle:
        return True
    hay = " ".join(
        x
        for x in (
            str(p.pid),
            f"gpu{p.gpu_index}",
            p.user or "",
            p.type,
            p.container or "",
            p.command or "",
        )
    )
    return needle.lower() in hay.lower()


def default_reverse(column: str) -> bool:
    """A newly chosen sort column starts largest-first for numbers, A-Z for names."""
    return column not in ("gpu", "pid", "container", "user", "type", "command")


def sort_key(column: str, reverse: bool) -> Callable[[GpuProcess], tuple[int, Any, int, int]]:
    """Missing values sort last whichever the direction; ties break on (GPU, PID)."""
    get = BY_KEY[column].sort

    def key(p: GpuProcess) -> tuple[int, Any, int, int]:
        v = get(p)
        if v is None:
            return (0 if reverse else 1, 0, p.gpu_index, p.pid)
        return (1 if reverse else 0, v, p.gpu_index, p.pid)

    return key
