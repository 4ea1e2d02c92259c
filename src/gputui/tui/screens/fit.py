"""`f`: each configured model against each installed GPU, following live free memory.

The estimates come from gputui.fit; this screen only lays them out. The memory
bar shows what other processes hold now and the model's estimated peak on top,
so "fits in total but not right now" is visible at a glance. The models file is
re-read when its mtime changes.

Nothing here runs on the UI thread but the drawing. The models file may be
anyone's (`./gputui.toml` in a shared directory) and huge or hostile; reading
it, the estimates and the card ranking run in one thread worker per pass
(`estimate_pass`), never two at once, with a time budget checked between
models: a pass over budget stops, says so, and shows what it has. A single
estimate that will not end keeps its (daemon) thread busy but never the
screen, and never quitting.

A GPU that failed (fell off the bus), has no data or does not report its
memory is listed with its reason, never as a place a model fits. A GPU in MIG mode
is checked per instance, never as the card (tui/views/fit_targets.py). Opened from the
dashboard, the GPU (or MIG instance) selected there comes first, under the cursor.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from rich.console import Group
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.message import Message
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static

from gputui.catalog import Catalog, load_catalog
from gputui.core.errors import UserError
from gputui.core.textsafe import visible
from gputui.fit.check import TransformerCheck, check, check_transformer, rank_transformer
from gputui.fit.core.target import Target
from gputui.fit.graph.estimate import ModelCheck
from gputui.fit.graph.ranking import Ranked, rank_cards
from gputui.fit.modelsfile import AnyModel, ModelSpec, shown
from gputui.fit.paths import resolve_models_path
from gputui.fit.report import (
    batch_text,
    flops_text,
    gib,
    speed_assumes,
)
from gputui.fit.targets import (
    Unavailable,
    targets_from_snapshot,
    unavailable_devices,
    unavailable_reason,
)
from gputui.fit.transformer.ranking import Ranked as LlmRanked
from gputui.fit.transformer.table import TransformerSpec
from gputui.model.snapshot import DeviceSnapshot, Snapshot
from gputui.tui.fit_detail import (
    breakdown_table,
    layers_table,
    precision_table,
    ranking_table,
    verdict_text,
)
from gputui.tui.fit_rows import transformer_detail
from gputui.tui.views.fit_targets import (
    mig_advice,
    mig_inputs,
    preferred,
    target_key,
    target_label,
)
from gputui.tui.views.model_files import load_any

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
    ("bar", "Memory (others | model | free)"),
)
RECHECK_S = 10.0  # an unchanged snapshot still starts a pass this often
ESTIMATE_BUDGET_S = 5.0  # one pass over every model and GPU; the rest is skipped after it


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


def split_devices(snapshot: Snapshot) -> tuple[Snapshot, list[Unavailable]]:
    """The snapshot with only usable GPUs, and the others with their reasons."""
    usable: list[DeviceSnapshot] = []
    # shared with `gputui fit` (fit/targets.py); a MIG instance with unreadable memory too
    lost = unavailable_devices(snapshot)
    for dev in snapshot.devices:
        if unavailable_reason(dev) is None:
            usable.append(dev)
    if len(usable) == len(snapshot.devices):
        return snapshot, lost
    return replace(snapshot, devices=tuple(usable)), lost


def _estimate_inputs(snapshot: Snapshot) -> tuple[object, ...]:
    """What the estimates read of a snapshot: a new pass is due only when this changes."""
    whole = tuple(
        (
            d.index,
            d.failed,
            d.unsupported,
            None if d.sample is None else (d.sample.memory_total, d.sample.memory_free),
        )
        for d in snapshot.devices
    )
    return (*whole, mig_inputs(snapshot))


@dataclass(frozen=True)
class FitPass:
    """What one worker pass found; applied to the screen on the UI thread."""

    path: Path | None = None
    origin: str = ""
    mtime: float | None = None
    models: tuple[AnyModel, ...] = ()
    error: str | None = None
    warnings: tuple[str, ...] = ()
    catalog: Catalog | None = None
    targets: tuple[Target, ...] = ()
    unavailable: tuple[Unavailable, ...] = ()
    checks: tuple[ModelCheck | TransformerCheck, ...] = ()
    rankings: dict[str, list[Ranked]] = field(default_factory=dict)
    llm_rankings: dict[str, list[LlmRanked]] = field(default_factory=dict)  # kind = "transformer"
    stopped: str | None = None  # why the pass did not finish
    elapsed_s: float = 0.0


def _mtime(path: Path | None) -> float | None:
    try:
        return path.stat().st_mtime if path is not None else None
    except OSError:
        return None


def estimate_pass(
    requested: Path | None,
    snapshot: Snapshot | None,
    previous: FitPass | None,
    *,
    reload: bool = False,
    budget_s: float = ESTIMATE_BUDGET_S,
    clock: Callable[[], float] = time.monotonic,
    estimate: Callable[[ModelSpec, Target], ModelCheck] | None = None,
    rank: bool = True,
) -> FitPass:
    """Read the models file (again only when it changed) and check every model on every GPU.

    `rank=False` (the dashboard's fit line) skips ranking the catalog's cards, the slow part.
    """
    estimate = estimate or check
    started = clock()
    warnings: list[str] = []
    catalog = previous.catalog if previous is not None else None
    try:
        if catalog is None:
            catalog = load_catalog()
        path, origin = resolve_models_path(requested, warn=warnings.append)
    except UserError as exc:
        return FitPass(error=visible(str(exc)), catalog=catalog, elapsed_s=clock() - started)
    mtime = _mtime(path)
    models: tuple[AnyModel, ...]
    error: str | None = None
    rankings: dict[str, list[Ranked]] = {}
    llm_rankings: dict[str, list[LlmRanked]] = {}
    if (
        not reload
        and previous is not None
        and previous.path == path
        and previous.mtime == mtime
        and previous.error is None
    ):
        models, rankings = previous.models, dict(previous.rankings)
        llm_rankings = dict(previous.llm_rankings)
        warnings = list(previous.warnings)
    else:
        try:
            models = load_any(path)  # a TOML, or one Keras, HF or GGUF model file
        except UserError as exc:
            models, error = (), visible(str(exc))
    read = FitPass(
        path=path,
        origin=origin,
        mtime=mtime,
        models=models,
        error=error,
        warnings=tuple(warnings),
        catalog=catalog,
        rankings=rankings,
        llm_rankings=llm_rankings,
    )
    if snapshot is None:
        return replace(read, elapsed_s=clock() - started)
    usable, lost = split_devices(snapshot)
    targets = tuple(targets_from_snapshot(usable, catalog, mig_instances=True))
    checks: list[ModelCheck | TransformerCheck] = []
    stopped: str | None = None
    total = len(targets) * len(models)
    for model in models:
        for target in targets:
            if clock() - started > budget_s:
                stopped = (
                    f"stopped after {len(checks)} of {total} estimates: over the "
                    f"{budget_s:g} s budget (a very large models file?)"
                )
                break
            if isinstance(model, TransformerSpec):  # its own estimator, same budget
                checks.append(check_transformer(model, target))
            else:
                checks.append(estimate(model, target))
        if stopped:
            break
    # Ranking every catalog card is the slow part: done with what is left of the budget,
    # kept across passes, so a later pass completes it.
    for model in models if rank else ():
        if clock() - started > budget_s:
            break
        if isinstance(model, TransformerSpec):
            if model.name not in llm_rankings:
                llm_rankings[model.name] = rank_transformer(model, catalog)
        elif model.name not in rankings:
            rankings[model.name] = rank_cards(model, catalog.cards, catalog.architectures)
    return replace(
        read,
        targets=targets,
        unavailable=tuple(lost),
        checks=tuple(checks),
        rankings=rankings,
        llm_rankings=llm_rankings,
        stopped=stopped,
        elapsed_s=clock() - started,
    )


class PassDone(Message):
    def __init__(self, result: FitPass) -> None:
        super().__init__()
        self.result = result


class FitScreen(Screen[None]):
    DEFAULT_CSS = """
    FitScreen { layout: vertical; }
    #fit-source { height: auto; padding: 0 1; background: $boost; }
    #fit-table { height: 1fr; min-height: 5; }
    #fit-detail-scroll { height: 2fr; border-top: solid $primary; }
    #fit-detail { padding: 0 1; }
    """
    BINDINGS = [
        Binding("escape", "back", "Back"),
        Binding("f", "back", "Back", show=False),
        Binding("r", "reload", "Reload models"),
        Binding("o", "open_models", "Open file"),
    ]

    def __init__(
        self,
        models_path: Path | None,
        catalog: Catalog | None = None,
        *,
        budget_s: float | None = None,
        gpu: int | None = None,
        gpu_instance: int | None = None,
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.requested_path = models_path
        # the dashboard's selection (GPU index, MIG GPU instance id): its rows come first
        self.gpu, self.gpu_instance = gpu, gpu_instance
        self._placed = False  # the cursor was put on the chosen GPU's first row
        self.budget_s = ESTIMATE_BUDGET_S if budget_s is None else budget_s
        self.result = FitPass(catalog=catalog)
        self.busy = False  # a pass is running in its worker
        self._ready = False  # mounted: the table exists and passes may start
        self._busy_since = 0.0
        self._snapshot: Snapshot | None = None
        self._inputs: tuple[object, ...] | None = None
        self._again = False  # a snapshot (or reload) came while a pass ran
        self._reload = False
        self.passes = 0
        self.selected: int = 0
        self.rows: list[ModelCheck | TransformerCheck | Unavailable] = []
        self._warned: set[str] = set()

    # The last pass's findings, under the names the rest of gputui and the tests read.
    @property
    def path(self) -> Path | None:
        return self.result.path

    @property
    def origin(self) -> str:
        return self.result.origin

    @property
    def models(self) -> tuple[AnyModel, ...]:
        return self.result.models

    @property
    def error(self) -> str | None:
        return self.result.error

    @property
    def catalog(self) -> Catalog | None:
        return self.result.catalog

    @property
    def targets(self) -> tuple[Target, ...]:
        return self.result.targets

    @property
    def checks(self) -> tuple[ModelCheck | TransformerCheck, ...]:
        return self.result.checks

    @property
    def unavailable(self) -> tuple[Unavailable, ...]:
        return self.result.unavailable

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Text("Reading the models file…"), id="fit-source")
            yield DataTable(id="fit-table", cursor_type="row", zebra_stripes=True)
            with VerticalScroll(id="fit-detail-scroll"):
                yield Static("Waiting for the first poll of the GPUs…", id="fit-detail")
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one("#fit-table", DataTable)
        for key, label in COLUMNS:
            table.add_column(label, key=key)
        table.focus()
        self._ready = True
        self._start()
        self.set_interval(1.0, self._show_progress, name="fit-progress")

    # ------------------------------------------------------------------ data

    def update_snapshot(self, snapshot: Snapshot) -> None:
        """Called by the app after each poll: follow free memory, reload an edited file.

        A poll that changed nothing an estimate reads (free memory, devices, the
        models file's mtime) starts no pass, except every RECHECK_S.
        """
        key = (_mtime(self.result.path), *_estimate_inputs(snapshot))
        fresh = time.monotonic() - self._busy_since < RECHECK_S
        self._snapshot = snapshot
        if key == self._inputs and fresh:
            return
        self._inputs = key
        self._start()

    def action_reload(self) -> None:
        self._reload = True
        self._start()

    def action_back(self) -> None:
        self.app.pop_screen()

    def action_open_models(self) -> None:
        """Choose another models file (open_models.py); the dashboard's fit line follows."""
        from gputui.tui.screens.open_models import OpenModelsScreen

        def chosen(path: Path | None) -> None:
            if path is not None:
                self.requested_path = path
                if hasattr(self.app, "models_path"):
                    self.app.models_path = path
                self.action_reload()

        self.app.push_screen(OpenModelsScreen(), chosen)

    def _start(self) -> None:
        if not self._ready:
            return  # on_mount starts the first pass
        if self.busy:
            self._again = True
            return
        self.busy, self._again = True, False
        self._busy_since = time.monotonic()
        reload, self._reload = self._reload, False
        self._run_pass(self._snapshot, self.result, reload)

    # description: without it Textual builds one from repr() of every argument, here a
    # Snapshot and the previous pass with its whole catalog: seconds of UI-thread time.
    @work(thread=True, exit_on_error=False, group="fit-estimates", description="fit estimates")
    def _run_pass(self, snapshot: Snapshot | None, previous: FitPass, reload: bool) -> None:
        try:
            result = estimate_pass(
                self.requested_path, snapshot, previous, reload=reload, budget_s=self.budget_s
            )
        except Exception as exc:  # an estimator bug is shown on this screen, never fatal
            result = FitPass(
                catalog=previous.catalog, error=visible(f"{type(exc).__name__}: {exc}")
            )
        self.post_message(PassDone(result))

    def on_pass_done(self, message: PassDone) -> None:
        self.busy = False
        self.passes += 1
        self.result = message.result
        for warning in message.result.warnings:
            if warning not in self._warned:
                self._warned.add(warning)
                self.notify(warning, severity="warning", timeout=8, markup=False)
        self.query_one("#fit-source", Static).update(self._source_text())
        self._refresh_table()
        if self._again or self._reload:
            self._start()

    def _show_progress(self) -> None:
        if self.busy and time.monotonic() - self._busy_since >= 1.0:
            self.query_one("#fit-source", Static).update(self._source_text())

    # ---------------------------------------------------------------- render

    def _source_text(self) -> Text:
        r = self.result
        if self.busy and time.monotonic() - self._busy_since >= 1.0:
            waited = time.monotonic() - self._busy_since
            over = " (over its budget: a very large models file?)" if waited > self.budget_s else ""
            return Text(f"Estimating… {waited:.0f} s{over}", style="bold yellow")
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

    def _refresh_table(self) -> None:
        table = self.query_one("#fit-table", DataTable)
        cursor = table.cursor_row if self._placed else -1
        table.clear()
        # Unavailable GPUs first: a lost GPU must not hide below the fold. Then the GPU
        # chosen on the dashboard, so the first detail shown is about it.
        lost = sorted(self.unavailable, key=lambda u: u.index != self.gpu)
        checks = sorted(self.checks, key=lambda c: not self._chosen(c.target))
        self.rows = [*lost, *checks]
        for j, u in enumerate(lost):
            table.add_row(
                Text("(every model)", style="dim"),
                Text(f"{u.index}: {short_gpu_name(u.name)}"),
                Text("unavailable", style="bold red"),
                Text(u.reason, style="red"),  # where a verdict would be: on screen at 80 columns
                Text("-"),
                Text(""),
                Text(""),
                Text(""),
                key=f"lost-{j}",
            )
        for i, c in enumerate(checks):
            e = c.chosen
            peak = e.peak_bytes
            gpu = (
                target_label(c.target, short_gpu_name(c.target.name))
                if c.target.index is not None
                else c.target.name
            )
            free_known = c.target.memory_free is not None
            table.add_row(
                # Text, not str: DataTable parses str cells as markup. visible(): the models
                # file is someone else's text (idempotent where fit/ already made it safe).
                Text(visible(c.model.name)),
                Text(gpu),
                verdict_text(e.verdict_free) if free_known else Text("N/A (free unknown)"),
                verdict_text(e.verdict),
                batch_text(
                    e.max_batch_size_free if e.max_batch_size_free is not None else e.max_batch_size
                ),
                c.recommended,
                gib(peak),
                memory_bar(c.target, peak),
                key=str(i),
            )
        if self.rows:
            if cursor < 0:  # the first rows: the cursor on the chosen GPU's first one
                first = [n for n, r in enumerate(self.rows) if self._chosen_row(r)]
                cursor, self._placed = (first[0] if first else 0), True
            table.move_cursor(row=min(max(cursor, 0), len(self.rows) - 1))
            self._show_detail(table.cursor_row)
        else:
            self.query_one("#fit-detail", Static).update(self._empty_text())

    def _empty_text(self) -> Text:
        if self.error:
            return Text("Fix the models file; it is re-read when it changes.", style="dim")
        if self._snapshot is None:
            return Text("Waiting for the first poll of the GPUs…", style="dim")
        if not self.targets:
            return Text("No GPU with readable memory in this snapshot.", style="dim")
        return Text("The models file has no models.", style="dim")

    def _chosen(self, target: Target) -> bool:
        return preferred(target_key(target), self.gpu, self.gpu_instance)

    def _chosen_row(self, row: ModelCheck | TransformerCheck | Unavailable) -> bool:
        if isinstance(row, Unavailable):
            return self.gpu is not None and row.index == self.gpu
        return self._chosen(row.target)

    @on(DataTable.RowHighlighted, "#fit-table")
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._show_detail(event.cursor_row)

    def _show_detail(self, row: int) -> None:
        if not 0 <= row < len(self.rows):
            return
        self.selected = row
        item = self.rows[row]
        detail: Group | Text
        if isinstance(item, Unavailable):
            detail = Text(
                f"GPU {item.index} ({item.name}) cannot hold a model now: {item.reason}. "
                "No estimate is shown for it."
            )
        elif isinstance(item, TransformerCheck):
            detail = transformer_detail(item, self.result.llm_rankings.get(item.model.name))
        else:
            detail = self.detail(item)
        if not isinstance(item, Unavailable) and item.target.mig is not None:
            # a MIG instance: which instance, or which profile, would hold it (`gputui fit`'s)
            advice = mig_advice(self.checks, item.model.name)
            detail = Group(*(Text(a, style="yellow") for a in advice), detail)
        self.query_one("#fit-detail", Static).update(detail)

    def detail(self, c: ModelCheck) -> Group:
        m = c.model
        e = c.chosen
        head = Text()
        head.append(visible(m.name), style="bold")
        head.append(
            # An optimizer only where one runs: training (not inference, nor evaluation).
            f"  {m.kind}, {c.mode}{f', {m.optimizer}' if c.mode == 'train' else ''},"
            f" batch {c.batch_size}; {m.params:,} params "
            f"({m.trainable_params:,} trainable); {flops_text(m.flops)}/sample forward\n"
        )
        head.append(f"Recommended {c.recommended}: {c.recommended_reason}\n")
        head.append(f"Peak {gib(e.peak_bytes)} during {e.peak_phase}\n", style="bold")
        head.append(speed_assumes(m) + "\n", style="dim")
        return Group(
            head,
            breakdown_table(e),
            precision_table(c),
            layers_table(m, e.speed.profile if e.speed else None),
            ranking_table(m, self.result.rankings),
        )
