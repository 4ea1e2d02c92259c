"""The fit verdicts of every GPU in one line: what the dashboard shows until expanded.

Eight per-GPU fit lines took a third of an 80x24 screen, where process rows
belong. The summary names, per model, where it fits in the free memory now:
on every GPU with a verdict, on some (which), or on none; GPUs that are
unavailable or whose free memory is unknown are counted, never judged.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text

from gputui.tui.widgets.fit_verdicts import (
    NO_MODELS_ORIGIN,
    names_text,
    no_models_line,
    verdicts_by_gpu,
)

if TYPE_CHECKING:
    from gputui.tui.views.fit_pass import FitPass

EXPAND_KEY = "e"


def _gpus(indices: list[int]) -> str:
    return "GPU " + ",".join(str(i) for i in sorted(indices))


def summary_line(result: FitPass, per_gpu: list[Text]) -> Text:
    """One line for all GPUs; a single GPU's own line where there is only one."""
    if result.error or result.origin == NO_MODELS_ORIGIN:
        return per_gpu[0] if per_gpu else no_models_line()
    # A GPU in MIG mode has one target per instance (and may list an unreadable one among
    # the unavailable): counted once, as a GPU.
    indices = {t.index for t in result.targets if t.index is not None}
    gpu_count = len(indices | {u.index for u in result.unavailable})
    if gpu_count <= 1 and len(result.targets) <= 1 and per_gpu:  # not MIG's instances
        if not result.stopped or len(per_gpu) == 1:
            return per_gpu[0]
        one = per_gpu[0].copy()
        one.append(f"; {result.stopped}", style="yellow")
        return one
    line = Text(no_wrap=True, overflow="ellipsis", end="")
    line.append(f"Fit, {gpu_count} GPUs ({EXPAND_KEY}: per GPU): ", style="bold")
    judged = sorted(
        {t.index for t in result.targets if t.index is not None and t.memory_free is not None}
    )
    by_gpu = verdicts_by_gpu(result)
    fits_on: dict[str, list[int]] = {}
    for index in judged:
        for name, verdict, _ in by_gpu.get(index, []):
            where = fits_on.setdefault(name, [])
            if verdict in ("fits", "tight"):
                where.append(index)
    everywhere = [n for n, w in fits_on.items() if judged and len(w) == len(judged)]
    some = [f"{n} ({_gpus(w)})" for n, w in fits_on.items() if w and len(w) < len(judged)]
    nowhere = [n for n, w in fits_on.items() if not w]
    parts: list[tuple[str, str, list[str]]] = []
    if everywhere:
        parts.append(
            ("fits now on all: " if len(judged) > 1 else "fits now: ", "green", everywhere)
        )
    if some:
        parts.append(("on some: ", "green", some))
    if nowhere:
        parts.append(("on none: ", "red", nowhere))
    if not parts:
        line.append("no estimate yet" if judged else "no GPU to judge now", style="dim")
    for n, (label, style, names) in enumerate(parts):
        if n:
            line.append("; ")
        line.append(label, style=style)
        line.append(names_text(names))
    unknown = sorted(
        {t.index for t in result.targets if t.index is not None and t.memory_free is None}
        - set(judged)
    )
    if result.unavailable:
        lost = sorted({u.index for u in result.unavailable})
        line.append(f"; {_gpus(lost)} unavailable", style="bold red")
    if unknown:
        line.append(f"; {_gpus(unknown)}: free memory unknown", style="yellow")
    if result.stopped:
        line.append(f"; {result.stopped}", style="yellow")
    return line
