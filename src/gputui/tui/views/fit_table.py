"""The Fit screen's table, Textual-free: its columns, one row's cells and the lines around it.

The screen (screens/fit.py) puts these into its DataTable and Statics. Cells are
rich Text, never str: DataTable parses str cells as markup, and a model's name
comes from someone else's models file.
"""

from __future__ import annotations

from rich.text import Text

from gputui.core.textsafe import visible
from gputui.fit import ModelCheck, Target, TransformerCheck, shown
from gputui.fit.report import batch_text, gib
from gputui.fit.targets import Unavailable
from gputui.tui.views.fit_detail import verdict_text
from gputui.tui.views.fit_pass import FitPass
from gputui.tui.views.fit_targets import target_label

BAR_WIDTH = 24
# The verdict first: at 80 columns the table shows model, GPU and both verdicts.
COLUMNS = (
    ("model", "Model"),
    ("gpu", "GPU"),
    ("verdict", "Now"),
    ("total", "Total"),
    ("batch", "Max batch now"),
    ("precision", "Precision"),
    ("peak", "Est. peak"),
    ("bar", "Others|model|free"),  # the bar's parts, over the bar
)
# The estimated peak and the memory bar need about 140 columns; below that they are left
# out (the detail pane under the table has both) instead of being cut at the edge.
WIDE_FROM = 140
WIDE_ONLY = frozenset({"peak", "bar"})
# Under NARROW_BELOW columns the model and GPU cells are cut (the detail pane below names
# them whole) so that "Max batch now" stays on screen: a MIG instance's label filled 80.
NARROW_BELOW = 100
NARROW_WIDTHS = {"model": 14, "gpu": 14}


def memory_bar(target: Target, peak: int, width: int = BAR_WIDTH) -> Text:
    """Others' usage (dim), the model's estimated peak (by verdict), then free space."""
    total = max(target.memory_total, 1)
    free = target.memory_free if target.memory_free is not None else total
    others = max(total - free, 0)
    cells_others = round(width * others / total)
    cells_model = min(round(width * peak / total), width - cells_others)
    overflow = peak > free
    bar = Text()
    bar.append("█" * cells_others, style="grey50")
    bar.append("█" * cells_model, style="red" if overflow else "green")
    bar.append("░" * (width - cells_others - cells_model), style="grey30")
    if overflow:
        bar.append("▶", style="bold red")
    return bar


def short_gpu_name(name: str) -> str:
    for prefix in ("NVIDIA ", "GeForce "):
        if name.startswith(prefix):
            name = name[len(prefix) :]
    return name


def lost_cells(u: Unavailable) -> tuple[Text, ...]:
    """A GPU that cannot hold a model: its reason where a verdict would be (on screen at 80)."""
    return (
        Text("(every model)", style="dim"),
        Text(f"{u.index}: {short_gpu_name(u.name)}"),
        Text("unavailable", style="bold red"),
        Text(u.reason, style="red"),
        Text("-"),
        Text(""),
        Text(""),
        Text(""),
    )


def check_cells(c: ModelCheck | TransformerCheck) -> tuple[Text | str, ...]:
    """One model on one GPU (or MIG instance): verdicts now and on total, batch, precision."""
    e = c.chosen
    peak = e.peak_bytes
    gpu = (
        target_label(c.target, short_gpu_name(c.target.name))
        if c.target.index is not None
        else c.target.name
    )
    free_known = c.target.memory_free is not None
    return (
        # visible(): the models file is someone else's text (idempotent where fit/ made it safe).
        # "…" where a narrow table cuts them (NARROW_WIDTHS): cut, not silently shortened.
        Text(visible(c.model.name), overflow="ellipsis", no_wrap=True),
        Text(gpu, overflow="ellipsis", no_wrap=True),
        verdict_text(e.verdict_free) if free_known else Text("N/A (free unknown)"),
        verdict_text(e.verdict),
        batch_text(
            e.max_batch_size_free if e.max_batch_size_free is not None else e.max_batch_size
        ),
        c.recommended,
        gib(peak),
        memory_bar(c.target, peak),
    )


def source_text(r: FitPass, busy_for_s: float | None, budget_s: float) -> Text:
    """The line above the table: the models file, or the pass running for a second or more."""
    if busy_for_s is not None:
        over = " (over its budget: a very large models file?)" if busy_for_s > budget_s else ""
        return Text(f"Estimating… {busy_for_s:.0f} s{over}", style="bold yellow")
    if r.error:
        return Text(f"models file problem: {r.error}", style="bold red")
    if r.path is None:
        return Text("Reading the models file…")
    text = Text(f"Models: {visible(shown(r.path))} ({r.origin}), {len(r.models)} model(s). ")
    if r.stopped:
        text.append(r.stopped + ". ", style="bold yellow")
    for warning in r.warnings:
        text.append(warning + ". ", style="yellow")
    text.append("Estimates are for PyTorch; speed is rough.", style="dim")
    return text


def empty_text(r: FitPass, polled: bool) -> Text:
    """What the detail pane says while the table has no row."""
    if r.error:
        return Text("Fix the models file; it is re-read when it changes.", style="dim")
    if not polled:
        return Text("Waiting for the first poll of the GPUs…", style="dim")
    if not r.targets:
        return Text("No GPU with readable memory in this snapshot.", style="dim")
    return Text("The models file has no models.", style="dim")


def unavailable_detail(item: Unavailable) -> Text:
    return Text(
        f"GPU {item.index} ({item.name}) cannot hold a model now: {item.reason}. "
        "No estimate is shown for it."
    )
