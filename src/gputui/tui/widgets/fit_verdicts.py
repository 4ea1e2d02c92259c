"""Each model's verdict per GPU from one fit pass, and the words shared by the fit lines.

Shared by the per-GPU lines (fit_line) and the one-line summary (fit_summary), so that
neither imports the other.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text

from gputui.core.textsafe import visible
from gputui.tui.views.fit_targets import TargetKey, target_key

if TYPE_CHECKING:
    from gputui.tui.views.fit_pass import FitPass

MAX_NAMES = 4  # models named per verdict before "+N more"
NO_MODELS_ORIGIN = "shipped examples"  # fit.paths' label when the user configured none


def no_models_line() -> Text:
    """The dashboard judges only the user's own models, never the shipped toy examples."""
    return Text("Fit: no models configured: f to choose a file", style="dim", end="")


def verdicts_by_target(result: FitPass) -> dict[TargetKey, list[tuple[str, str, int | None]]]:
    """(model name, verdict now, largest batch now) per whole GPU or MIG instance."""
    by_key: dict[TargetKey, list[tuple[str, str, int | None]]] = {}
    for c in result.checks:
        key = target_key(c.target)
        if key is None:
            continue
        e = c.chosen
        verdict = e.verdict_free if c.target.memory_free is not None else None
        by_key.setdefault(key, []).append(
            (visible(c.model.name), verdict or "unknown", e.max_batch_size_free)
        )
    return by_key


_RANK = {"fits": 0, "tight": 1, "does not fit": 2}


def verdicts_by_gpu(result: FitPass) -> dict[int, list[tuple[str, str, int | None]]]:
    """(model name, verdict now, largest batch now) per GPU index: of a MIG GPU, its best
    instance for each model (a job runs in one instance, so "fits GPU 0" means in one)."""
    best: dict[int, dict[str, tuple[str, str, int | None]]] = {}
    for (index, _), rows in verdicts_by_target(result).items():
        models = best.setdefault(index, {})
        for row in rows:
            old = models.get(row[0])
            if old is None or _RANK.get(row[1], 3) < _RANK.get(old[1], 3):
                models[row[0]] = row
    return {index: list(models.values()) for index, models in best.items()}


def names_text(items: list[str]) -> str:
    shown = items[:MAX_NAMES]
    more = len(items) - len(shown)
    return ", ".join(shown) + (f" +{more} more" if more > 0 else "")
