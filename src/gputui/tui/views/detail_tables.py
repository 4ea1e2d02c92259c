"""The table frames both fit detail panes (graph and transformer models) draw.

One place says how a detail table looks (title on the left, figures right-aligned)
so the two panes cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Container, Iterable

from rich.table import Table

from gputui.fit.report import gib


def titled_table(title: str, labels: Iterable[str], left: Container[str] = ()) -> Table:
    """A table with its title on the left; the columns named in `left` left-aligned, the rest right."""
    t = Table(title=title, title_justify="left")
    for label in labels:
        t.add_column(label, justify="left" if label in left else "right")
    return t


def breakdown_table(parts: dict[str, int]) -> Table:
    """The memory at the peak, one column a part (its name with spaces), in GiB."""
    t = titled_table("Memory at the peak", ())
    values = [gib(v) for v in parts.values()]
    for key, value in zip(parts, values, strict=True):
        # A figure is never wrapped away from its unit ("400.0" over "MiB"): the name wraps.
        t.add_column(key.replace("_", " "), justify="right", min_width=len(value))
    t.add_row(*values)
    return t
