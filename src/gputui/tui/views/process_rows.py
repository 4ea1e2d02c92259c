"""The process table's rows: which show, in what order, with what cells; free of Textual.

The widget (widgets/process_table.py) only diffs these against what it shows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from gputui.model.snapshot import GpuProcess
from gputui.tui.views.process_columns import COMMAND_MIN, Column, matches, row_key, sort_key
from gputui.tui.views.process_tree import Ancestors, TreeRow, layout

TAG_MARK = "● "


def ordered_rows(
    processes: Sequence[GpuProcess],
    *,
    needle: str,
    user: str | None,
    column: str,
    reverse: bool,
    parents: Mapping[int, Ancestors] | None,
) -> list[TreeRow]:
    """Rows to show, in display order: those matching `needle` (and `user`'s, when given),
    sorted by `column`, or as a tree under their `parents` when given."""
    wanted = [
        (row_key(p), p)
        for p in processes
        if matches(p, needle) and (user is None or p.user == user)
    ]
    skey = sort_key(column, reverse)
    wanted.sort(key=lambda kp: skey(kp[1]), reverse=reverse)
    if parents is not None:
        return layout(wanted, parents)
    return [TreeRow(k, p.pid, "", proc=p) for k, p in wanted]


def scrolled(command: str, offset: int) -> str:
    """The command from `offset` on (left/right scroll it), `…` where its start is cut."""
    if offset <= 0 or len(command) <= offset:
        return command if offset <= 0 else "…"
    return "…" + command[offset + 1 :]


def row_cells(row: TreeRow, shown: Sequence[Column], tagged: bool, offset: int = 0) -> list[str]:
    """What each shown column says for `row`; the command carries the tag mark and the
    tree's prefix, and starts `offset` characters in (scrolled sideways)."""
    mark = TAG_MARK if tagged else ""
    proc = row.proc
    if proc is None:  # a parent that holds no GPU context: its PID and name
        return [
            str(row.pid) if c.key == "pid" else row.prefix + row.name if c.key == "command" else ""
            for c in shown
        ]
    cells = [c.cell(proc) for c in shown]
    if offset:
        cells[-1] = scrolled(cells[-1], offset)
    if mark or row.prefix:
        cells[-1] = mark + row.prefix + cells[-1]  # the command is always the last column
    return cells


def command_width(shown: Sequence[Column], width: int, padding: int) -> int:
    """The command column's width: what the fixed columns (and their padding) leave of
    `width`, at least COMMAND_MIN."""
    fixed = sum(c.room for c in shown if c.width) + 2 * padding * len(shown)
    return max(COMMAND_MIN, width - fixed - 1)
