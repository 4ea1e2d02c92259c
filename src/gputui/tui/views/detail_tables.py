"""The table frames both fit detail panes (graph and transformer models) draw, and
the one table of a catalog ranking they both show.

One place says how a detail table looks (title on the left, figures right-aligned)
so the two panes cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Container, Iterable, Sequence
from typing import Any

from rich.table import Table
from rich.text import Text

from gputui.fit import Ranked
from gputui.fit.report import bound_cell, gib, throughput_cell, throughput_label

RANK_TOP = 10
VERDICT_STYLE = {"fits": "green", "tight": "yellow", "does not fit": "bold red"}


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


def ranking_table(ranked: Sequence[Ranked[Any]] | None, top: int = RANK_TOP) -> Table:
    """The catalog ranking of any model kind, from the worker's pass (ranking every card
    is not done on the UI thread; None: not ranked yet). The columns are the CLI's: the
    longest sequence and the cards needed where a row has them."""
    rows = list(ranked or ())[:top]
    longest = any(r.longest_seq_len is not None for r in rows)
    counted = any(r.cards_counted for r in rows)
    label = throughput_label(rows[0]) if rows else "throughput"
    labels = ["#", "card", "precision", "memory", "verdict", "max batch"]
    labels += ["longest"] if longest else []
    labels += [f"{label} (rough)", "bound"]
    labels += ["cards needed"] if counted else []
    labels += ["per $1k launch"]
    t = titled_table(f"Other cards (top {top})", labels, left={"card", "precision", "bound"})
    if ranked is None:
        t.caption = "ranking the catalog's cards… (shown on a later pass)"
    for i, r in enumerate(rows):
        cells: list[str | Text] = [
            str(i + 1),
            Text(r.card.name),
            r.precision or "-",
            gib(r.card.memory_bytes),
            Text(r.verdict, style=VERDICT_STYLE.get(r.verdict, "")),
            "unbounded" if r.batch_unbounded else f"{r.max_batch_size:,}",
        ]
        if longest:
            cells.append(f"{r.longest_seq_len:,}" if r.longest_seq_len is not None else "-")
        cells += [throughput_cell(r), bound_cell(r)]
        if counted:
            cells.append(f"{r.cards_needed} ({r.cards_split})" if r.cards_needed else "> 64")
        per = r.per_dollar
        cells.append(f"{per * 1000:,.1f}" if per else "-")
        t.add_row(*cells)
    return t
