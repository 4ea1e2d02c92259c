"""The Fit verdict on the dashboard: one line per GPU, which configured models fit in the memory free now.

The estimates are the Fit screen's own pass (`fit_screen.estimate_pass`, without
the catalog ranking), run in a thread worker, one at a time, under the same
time budget; the UI thread only draws the result. A pass is cheap to skip:
a new one starts only when a GPU's free memory moved by more than
`FREE_THRESHOLD` (of its total, at least `FREE_MIN_BYTES`; at most one such
pass every `MIN_GAP_S`), a GPU appeared,
failed or came back, or the models file changed. The fit engine and the
catalog are imported by the first pass, in its thread, after the first frame:
the dashboard starts without them (and never loads pydantic: the catalog is
read from its cache, docs/catalog.md).

A lost or unreadable GPU shows its reason, never a verdict. A GPU in MIG mode is
judged per instance (`tui/views/fit_targets.py`): a job gets one instance, never the card.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual import work
from textual.message import Message
from textual.widget import Widget

from gputui.core.textsafe import visible
from gputui.model.snapshot import Snapshot
from gputui.tui.views.fit_targets import free_by_key, sort_key, target_key, target_label
from gputui.tui.widgets.fit_summary import summary_line
from gputui.tui.widgets.fit_verdicts import (
    NO_MODELS_ORIGIN,
    names_text,
    no_models_line,
    verdicts_by_target,
)

if TYPE_CHECKING:
    from gputui.fit import ModelCheck, ModelSpec, Target, TransformerCheck
    from gputui.tui.views.fit_result import FitPass

FREE_THRESHOLD = 0.02  # of the GPU's memory
FREE_MIN_BYTES = 256 * 1024**2
# Free memory that keeps moving (a training job's allocator) starts a pass at most this
# often; a GPU lost, added or back, or an edited models file, starts one at once.
MIN_GAP_S = 10.0


@dataclass(frozen=True, slots=True)
class _GpuKey:
    index: int
    failed: str | None
    total: int | None
    free: int | None
    migs: tuple[tuple[int | None, int | None, int | None], ...] = ()  # (GI id, total, free)


def pass_inputs(snapshot: Snapshot) -> tuple[_GpuKey, ...]:
    out = []
    for d in snapshot.devices:
        s = d.sample
        out.append(
            _GpuKey(
                d.index,
                d.failed if d.failed is not None else (None if s is not None else "no data"),
                None if s is None else (s.memory_total or d.info.memory_total),
                None if s is None else s.memory_free,
                tuple((m.gpu_instance_id, m.memory_total, m.memory_free) for m in d.mig_devices),
            )
        )
    return tuple(out)


def _moved(old: int | None, new: int | None, total: int | None) -> bool | None:
    """None: known on one side only (a pass now); else whether free moved past the threshold."""
    if (old is None) != (new is None):
        return None
    if old is None or new is None:
        return False
    return abs(old - new) > max(FREE_MIN_BYTES, FREE_THRESHOLD * (total or 0))


def change(old: Sequence[_GpuKey] | None, new: Sequence[_GpuKey]) -> str | None:
    """What changed that the estimates read: "devices" (now), "free" (worth a pass), or None."""
    if old is None or len(old) != len(new):
        return "devices"
    free = False
    for a, b in zip(old, new, strict=True):
        if (a.index, a.failed, a.total) != (b.index, b.failed, b.total):
            return "devices"
        if [m[:2] for m in a.migs] != [m[:2] for m in b.migs]:
            return "devices"  # an instance made, destroyed or resized
        pairs = [(a.free, b.free, b.total)] + [
            (ma[2], mb[2], mb[1]) for ma, mb in zip(a.migs, b.migs, strict=True)
        ]
        for old_free, new_free, total in pairs:
            moved = _moved(old_free, new_free, total)
            if moved is None:
                return "devices"
            free = free or moved
    return "free" if free else None


def needs_pass(old: Sequence[_GpuKey] | None, new: Sequence[_GpuKey]) -> bool:
    """True when the estimates would read something new enough to be worth a pass."""
    return change(old, new) is not None


def fit_lines(result: FitPass) -> list[Text]:
    """One line per installed GPU, in index order, an unavailable one with its reason."""
    if result.error:
        return [Text(f"Fit: models file problem: {result.error}", style="bold red")]
    if result.origin == NO_MODELS_ORIGIN:
        return [no_models_line()]
    from gputui.fit.report import batch_text  # the fit engine: only with models to judge

    lines: list[tuple[tuple[int, int], Text]] = []
    for u in result.unavailable:
        line = Text(no_wrap=True, overflow="ellipsis", end="")
        mig = f" ({visible(u.name)})" if " MIG " in u.name else ""  # an unreadable instance
        line.append(f"Fit GPU {u.index}{mig}: ", style="bold")
        line.append(f"unavailable: {visible(u.reason)}", style="bold red")
        lines.append(((u.index, -1), line))
    by_key = verdicts_by_target(result)
    for t in result.targets:
        key = target_key(t)
        if key is None:
            continue
        rows = by_key.get(key, [])
        line = Text(no_wrap=True, overflow="ellipsis", end="")
        line.append(f"Fit {target_label(t)}: ", style="bold")
        if t.memory_free is None:
            line.append("free memory unknown: no verdict now", style="yellow")
            lines.append((sort_key(key), line))
            continue
        fits = [
            f"{name} (batch {batch_text(b).split(' ')[0]})"
            for name, v, b in rows
            if v in ("fits", "tight")
        ]
        no = [name for name, v, _ in rows if v == "does not fit"]
        if fits:
            line.append("fits now: ", style="green")
            line.append(names_text(fits))
        elif rows:
            line.append("no configured model fits in the free memory now", style="yellow")
        else:
            line.append("no estimate yet", style="dim")
        if no:
            line.append("  not: ", style="red")
            line.append(names_text(no))
        lines.append((sort_key(key), line))
    lines.sort(key=lambda il: il[0])
    out = [line for _, line in lines]
    if result.stopped:
        out.append(Text(f"Fit: {result.stopped}", style="yellow"))
    return out


def recommended_only(model: ModelSpec, target: Target) -> ModelCheck:
    """The fit engine's check at the precision it recommends for this GPU: what the line shows.

    The Fit screen checks every precision; the line names one batch per model, so
    the other precisions would be a quarter of the work. It shows no speed either:
    without one no roofline profile is built, nor kept in the roofline's op cache
    (~0.6 MB for the shipped models on 8 GPUs, held for the dashboard's lifetime). So it
    checks the card's tensor-core choice (recommend()); the Fit screen, which computes the
    speed, may recommend a faster precision, and its reason says so.
    """
    from gputui.fit import FitRequest, check, recommend

    precision, _ = recommend(target.architecture, model.mode, target.card)
    request = FitRequest(model, (target,), precision=precision, with_speed=False)
    return check(request).checks[0]


class FreeOnly:
    """Re-answers a finished pass for new free memory, without the rest of the estimate.

    Between two passes over the same GPUs and models file only free memory moves
    (a training job's allocator), and of each check only two answers read it: the
    verdict now, `verdict(peak, free)`, and the largest batch now, the memory
    model's `max_batch(free)`. Both come from the same engine objects the full
    check used (the layer model's `memory_model`, the transformer's `memory`),
    built once per model, precision and compute capability and kept here; the
    precision choice, the peak at the configured batch, the totals, speeds and
    catalog matching do not change and are kept from the pass. ~10x cheaper than
    a full pass with the shipped models (tests/tui/test_tui_fit_line.py checks
    that its answers equal a full pass's at other free values). Answers the line
    does not show (a transformer's longest sequence now) are left out (None).
    Used from the pass worker only, one pass at a time.
    """

    def __init__(self) -> None:
        self._memories: dict[tuple[int, str, str | None, str], Any] = {}

    def refresh(self, result: FitPass, snapshot: Snapshot) -> FitPass | None:
        """`result` answered for `snapshot`'s free memory; None when only a full pass can say."""
        if result.error or result.stopped:
            return None
        free = free_by_key(snapshot)
        targets = {}
        for t in result.targets:
            key = target_key(t)
            if key is None or free.get(key) is None:
                return None
            targets[key] = replace(t, memory_free=free[key])
        checks = []
        for c in result.checks:
            key = target_key(c.target)
            target = targets.get(key) if key is not None else None
            if target is None:
                return None
            checks.append(self._answer(c, target))
        return replace(result, targets=tuple(targets.values()), checks=tuple(checks))

    def _answer(
        self, c: ModelCheck | TransformerCheck, target: Target
    ) -> ModelCheck | TransformerCheck:
        from gputui.fit import ModelCheck, memory_model, transformer_memory, verdict

        free = target.memory_free
        assert free is not None
        cc = target.compute_capability or (target.card.compute_capability if target.card else None)
        if isinstance(c, ModelCheck):
            e = c.chosen
            key = (id(c.model), e.precision, cc, c.backend)
            mm = self._memories.get(key)
            if mm is None:
                mm = self._memories[key] = memory_model(c.model, e.precision, cc, c.backend)
            new = replace(
                e,
                free_bytes=free,
                verdict_free=verdict(e.peak_bytes, free),
                max_batch_size_free=mm.max_batch(free),
            )
            return replace(
                c, target=target, estimates=tuple(new if x is e else x for x in c.estimates)
            )
        est = c.estimate
        wl = est.workload
        key = (id(c.model), wl.weights, cc, wl.backend)
        mem = self._memories.get(key)
        if mem is None:
            mem = self._memories[key] = transformer_memory(est.model, wl, cc)
        return replace(
            c,
            target=target,
            estimate=replace(
                est,
                target=target,
                free_bytes=free,
                verdict_free=verdict(est.peak_bytes, free),
                max_batch_size_free=mem.max_batch(free, wl.seq_len),
                longest_seq_free=None,
            ),
        )

    def forget(self) -> None:
        """A new models file or GPU set: the kept memory models may be of other models."""
        self._memories.clear()


def _unconfigured() -> FitPass | None:
    """A pass that says "no models configured" when the models file would be the shipped
    examples; None when the user has one. Its path is the user's config file, so that
    creating one starts a pass (`_models_mtime`)."""
    from gputui.core.errors import UserError
    from gputui.fit.paths import resolve_models_path, user_models_file
    from gputui.tui.views.fit_result import FitPass

    try:
        _, origin = resolve_models_path(None, warn=lambda _: None)
    except UserError:
        return None  # estimate_pass reports it
    if origin != NO_MODELS_ORIGIN:
        return None
    return FitPass(path=user_models_file(), origin=NO_MODELS_ORIGIN)


class FitLineDone(Message):
    def __init__(self, result: FitPass) -> None:
        super().__init__()
        self.result = result


class FitLine(Widget):
    """Fit verdicts under the host panel; `update_snapshot` after each poll."""

    DEFAULT_CSS = """
    FitLine { height: auto; padding: 0 1; text-wrap: nowrap; text-overflow: ellipsis; }
    """

    def __init__(
        self,
        models_path: Path | None = None,
        *,
        min_gap_s: float = MIN_GAP_S,
        id: str | None = "fit-line",
        held: bool = False,
    ) -> None:
        """`held`: no pass until `release()` (the dashboard's first frame comes first)."""
        super().__init__(id=id)
        self.held = held
        self.models_path = models_path
        self.min_gap_s = min_gap_s
        self._started_at = -math.inf
        self.result: FitPass | None = None
        self.busy = False
        self.passes = 0  # finished passes, full or free-only
        self.free_refreshes = 0  # of which free-only (FreeOnly)
        self._free = FreeOnly()
        self._inputs: tuple[_GpuKey, ...] | None = None
        self._mtime: float | None = None
        self._requested: Path | None = None  # the models file the last pass was asked for
        self._pending: Snapshot | None = None
        self._lines: list[Text] = [Text("Fit: estimating…", style="dim")]
        self.per_gpu: list[Text] = []  # every GPU's line; shown only when expanded
        self.expanded = False

    def release(self) -> None:
        """Passes may start; one starts now for the newest snapshot seen while held."""
        if not self.held:
            return
        self.held = False
        pending, self._pending = self._pending, None
        if pending is not None:
            self.update_snapshot(pending)

    def update_snapshot(self, snapshot: Snapshot) -> None:
        if self.held:
            self._pending = snapshot  # the newest one waits for release()
            return
        inputs = pass_inputs(snapshot)
        mtime = self._models_mtime()
        what = change(self._inputs, inputs)
        requested = self.models_path or getattr(self.app, "models_path", None)
        if mtime != self._mtime or requested != self._requested:
            what = "models"  # an edited file, or another one chosen (the Fit screen's o)
        if what is None:
            return
        if what == "free" and time.monotonic() - self._started_at < self.min_gap_s:
            return  # a later poll sees the same difference once the gap has passed
        if self.busy:
            self._pending = snapshot  # the newest one waits; older ones are dropped
            return
        self._inputs, self._mtime, self._requested = inputs, mtime, requested
        self._started_at = time.monotonic()
        self.busy = True
        self._run_pass(requested, snapshot, self.result, free_only=what == "free")

    def _models_mtime(self) -> float | None:
        path = self.result.path if self.result is not None else None
        try:
            return path.stat().st_mtime if path is not None else None
        except OSError:
            return None

    # description: without it Textual builds one from repr() of every argument (a Snapshot,
    # the previous pass and its whole catalog): measured at ~0.5 s of UI thread per pass.
    @work(thread=True, exit_on_error=False, group="fit-line", description="fit line")
    def _run_pass(
        self,
        requested: Path | None,
        snapshot: Snapshot,
        previous: FitPass | None,
        *,
        free_only: bool = False,
    ) -> None:
        from gputui.tui.views.fit_result import FitPass

        try:
            result = _unconfigured() if requested is None else None
            if result is None and free_only and previous is not None:
                result = self._free.refresh(previous, snapshot)
                if result is not None:
                    self.free_refreshes += 1
            if result is None:
                # The fit engine and the catalog: only for a models file of the user's.
                from gputui.tui.views.fit_pass import estimate_pass

                self._free.forget()
                result = estimate_pass(
                    requested, snapshot, previous, rank=False, estimate=recommended_only
                )
        except Exception as exc:  # an estimator bug is shown in the line, never fatal
            result = FitPass(error=visible(f"{type(exc).__name__}: {exc}"))
        self.post_message(FitLineDone(result))

    def on_fit_line_done(self, message: FitLineDone) -> None:
        self.busy = False
        self.passes += 1
        self.result = message.result
        if self._mtime is None:
            self._mtime = self._models_mtime()
        self.per_gpu = fit_lines(message.result)
        self._show()
        pending, self._pending = self._pending, None
        if pending is not None:
            self.update_snapshot(pending)

    def toggle(self) -> None:
        """One summary line, or every GPU's line (key e, or a click)."""
        self.expanded = not self.expanded
        self._show()

    def on_click(self) -> None:
        self.toggle()

    def _show(self) -> None:
        result = self.result
        if result is None:
            return
        lines = self.per_gpu if self.expanded else [summary_line(result, self.per_gpu)]
        if [ln.plain for ln in lines] != [ln.plain for ln in self._lines]:
            relayout = len(lines) != len(self._lines)  # a layout pass only when the height changes
            self._lines = lines
            self.refresh(layout=relayout)

    def get_content_height(self, container: object, viewport: object, width: int) -> int:
        return len(self._lines)

    def render(self) -> Text:
        out = Text(no_wrap=True, overflow="ellipsis", end="")
        for n, line in enumerate(self._lines):
            if n:
                out.append("\n")
            out.append_text(line)
        return out
