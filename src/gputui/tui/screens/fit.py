"""`f`: each configured model against each installed GPU, following live free memory.

The estimates come from gputui.fit, in one pass (views/fit_pass.py); this screen
only lays them out (views/fit_table.py, views/fit_detail.py). The memory bar shows
what other processes hold now and the model's estimated peak on top, so "fits in
total but not right now" is visible at a glance. The models file is re-read when
its mtime changes.

Nothing here runs on the UI thread but the drawing: a pass runs in one thread
worker, never two at once, within a time budget. A single estimate that will not
end keeps its (daemon) thread busy but never the screen, and never quitting.
Opened from the dashboard, the GPU (or MIG instance) selected there comes first,
under the cursor.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
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

from gputui.catalog import Catalog
from gputui.core.textsafe import visible
from gputui.fit import AnyModel, ModelCheck, Target, TransformerCheck
from gputui.fit.targets import Unavailable
from gputui.model.snapshot import Snapshot
from gputui.tui.views import fit_pass
from gputui.tui.views.fit_detail import model_detail
from gputui.tui.views.fit_pass import FitPass, estimate_inputs, estimate_pass, mtime_of
from gputui.tui.views.fit_table import (
    COLUMNS,
    NARROW_BELOW,
    NARROW_WIDTHS,
    WIDE_FROM,
    WIDE_ONLY,
    check_cells,
    empty_text,
    lost_cells,
    source_text,
    unavailable_detail,
)
from gputui.tui.views.fit_targets import mig_advice, preferred, target_key
from gputui.tui.views.transformer_detail import transformer_detail

RECHECK_S = 10.0  # an unchanged snapshot still starts a pass this often


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
        self._shown = list(range(len(COLUMNS)))  # the table's columns at this width (on_mount)
        # read at each opening: scripts/export_screenshots.py raises it so no pass is cut short
        self.budget_s = fit_pass.ESTIMATE_BUDGET_S if budget_s is None else budget_s
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

    def _cells(self, cells: Sequence[Text | str]) -> list[Text | str]:
        """The cells of the columns this width shows."""
        return [cells[n] for n in self._shown]

    def on_mount(self) -> None:
        table = self.query_one("#fit-table", DataTable)
        width = self.app.size.width
        narrow = NARROW_WIDTHS if width < NARROW_BELOW else {}
        self._shown = [
            n for n, (key, _) in enumerate(COLUMNS) if key not in WIDE_ONLY or width >= WIDE_FROM
        ]
        for n in self._shown:
            key, label = COLUMNS[n]
            table.add_column(label, key=key, width=narrow.get(key))
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
        key = (mtime_of(self.result.path), *estimate_inputs(snapshot))
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
        waited = time.monotonic() - self._busy_since
        busy_for = waited if self.busy and waited >= 1.0 else None
        return source_text(self.result, busy_for, self.budget_s)

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
            table.add_row(*self._cells(lost_cells(u)), key=f"lost-{j}")
        for i, c in enumerate(checks):
            table.add_row(*self._cells(check_cells(c)), key=str(i))
        if self.rows:
            if cursor < 0:  # the first rows: the cursor on the chosen GPU's first one
                first = [n for n, r in enumerate(self.rows) if self._chosen_row(r)]
                cursor, self._placed = (first[0] if first else 0), True
            table.move_cursor(row=min(max(cursor, 0), len(self.rows) - 1))
            self._show_detail(table.cursor_row)
        else:
            self.query_one("#fit-detail", Static).update(self._empty_text())

    def _empty_text(self) -> Text:
        return empty_text(self.result, polled=self._snapshot is not None)

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
        detail: Group | Text = (
            unavailable_detail(item) if isinstance(item, Unavailable) else self.detail(item)
        )
        if not isinstance(item, Unavailable) and item.target.mig is not None:
            # a MIG instance: which instance, or which profile, would hold it (`gputui fit`'s)
            advice = mig_advice(self.checks, item.model.name)
            detail = Group(*(Text(a, style="yellow") for a in advice), detail)
        self.query_one("#fit-detail", Static).update(detail)

    def detail(self, c: ModelCheck | TransformerCheck) -> Group:
        """One check's detail, with its model's ranking from the worker's pass."""
        ranked = self.result.rankings.get(c.model.name)
        if isinstance(c, TransformerCheck):
            return transformer_detail(c, ranked)
        return model_detail(c, ranked)
