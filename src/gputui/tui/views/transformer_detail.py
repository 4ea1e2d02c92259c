"""The Fit screen's detail view for a transformer row (gputui.fit's TransformerCheck).

The layer models' detail shows precisions and layers; a transformer's shows its
workload, the breakdown at the peak, the largest batch and the longest context
(on total and in the memory free now), and the card ranking from the worker's pass.
"""

from __future__ import annotations

from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text

from gputui.core.textsafe import visible
from gputui.fit import Ranked, TransformerCheck
from gputui.fit import transformer_model_line as model_line
from gputui.fit import transformer_workload_line as workload_line
from gputui.fit.report import gib
from gputui.fit.units import count
from gputui.tui.views.detail_tables import (
    VERDICT_STYLE,
    breakdown_table,
    ranking_table,
    titled_table,
)


def _verdict(v: str | None) -> Text:
    return Text(v or "-", style=VERDICT_STYLE.get(v or "", ""))


def transformer_detail(
    c: TransformerCheck, ranked: list[Ranked[Any]] | None, top: int = 10
) -> Group:
    e = c.estimate
    wl = e.workload
    seq_word = "prompt" if wl.mode == "generate" else "sequence"
    head = Text()
    head.append(visible(c.model.name), style="bold")
    about = model_line(c.model.model).removeprefix(f"model: {c.model.model.name} ")
    head.append(f"  transformer {visible(about)}\n")
    head.append(visible(workload_line(wl, c.model.model)) + "\n")
    head.append(f"Peak {gib(e.peak_bytes)} during {e.peak_phase}\n", style="bold")
    return Group(
        head,
        breakdown_table(e.breakdown.as_dict()),
        _answers(c, seq_word),
        *(Text(f"note: {visible(w)}", style="yellow") for w in e.warnings),
        ranking_table(ranked, top),
    )


def _answers(c: TransformerCheck, seq_word: str) -> Table:
    e = c.estimate
    wl = e.workload
    t = titled_table(
        "Answers",
        (
            "",
            "verdict",
            f"max batch at {wl.seq_len:,}",
            f"longest {seq_word}",
            "longest context",
        ),
        left={""},
    )
    cap = " (model max)" if e.longest_capped else ""
    t.add_row(
        f"total {gib(e.limit_bytes)}",
        _verdict(e.verdict),
        count(e.max_batch_size),
        f"{e.longest_seq:,}{cap}" if e.longest_seq else "none fits",
        f"{e.longest_context:,}" if e.longest_seq else "-",
    )
    if e.free_bytes is not None:
        longest = e.longest_seq_free or 0
        extra = wl.new_tokens if wl.mode == "generate" and longest else 0
        t.add_row(
            f"now {gib(e.free_bytes)} free",
            _verdict(e.verdict_free),
            count(e.max_batch_size_free or 0),
            f"{longest:,}" if longest else "none fits",
            f"{longest + extra:,}" if longest else "-",
        )
    return t
