"""`f`: each configured model against each installed GPU, following live free memory.

The estimates come from gputui.fit (pure, cheap: a few milliseconds per model);
this screen only lays them out. The memory bar shows what other processes hold
now and the model's estimated peak on top, so "fits in total but not right now"
is visible at a glance. The models file is re-read when its mtime changes.
"""

from __future__ import annotations

from pathlib import Path

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static

from gputui.catalog import Catalog, load_catalog
from gputui.errors import UserError
from gputui.fit.config import ModelSpec, load_models, shown
from gputui.fit.estimate import ModelCheck, PrecisionEstimate, Ranked, Target, check, rank_cards
from gputui.fit.paths import resolve_models_path
from gputui.fit.report import batch_text, flops_text, gib, layer_dict
from gputui.fit.targets import targets_from_snapshot
from gputui.telemetry.snapshot import Snapshot
from gputui.textsafe import visible

BAR_WIDTH = 24
VERDICT_STYLE = {"fits": "green", "tight": "yellow", "does not fit": "bold red"}
COLUMNS = (
    ("model", "Model"),
    ("gpu", "GPU"),
    ("precision", "Precision"),
    ("peak", "Est. peak"),
    ("bar", "Memory (others | model | free)"),
    ("verdict", "Now"),
    ("total", "Total"),
    ("batch", "Max batch now"),
)


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


def verdict_text(verdict: str | None) -> Text:
    if verdict is None:
        return Text("-")
    return Text(verdict, style=VERDICT_STYLE.get(verdict, ""))


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
    ]

    def __init__(
        self,
        models_path: Path | None,
        catalog: Catalog | None = None,
        *,
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.requested_path = models_path
        self.catalog = catalog
        self.path: Path | None = None
        self.origin = ""
        self.mtime: float | None = None
        self.models: tuple[ModelSpec, ...] = ()
        self.error: str | None = None
        self.targets: list[Target] = []
        self.checks: list[ModelCheck] = []
        self.selected: int = 0
        self._rankings: dict[str, list[Ranked]] = {}
        self._load()

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(self._source_text(), id="fit-source")
            yield DataTable(id="fit-table", cursor_type="row", zebra_stripes=True)
            with VerticalScroll(id="fit-detail-scroll"):
                yield Static("Waiting for the first poll of the GPUs…", id="fit-detail")
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one("#fit-table", DataTable)
        for key, label in COLUMNS:
            table.add_column(label, key=key)
        table.focus()
        self._refresh_table()

    # ------------------------------------------------------------------ data

    def _load(self) -> None:
        """(Re)read the models file; a bad file becomes a message, never a crash."""
        self._rankings.clear()
        try:
            if self.catalog is None:
                self.catalog = load_catalog()
            self.path, self.origin = resolve_models_path(self.requested_path)
            self.mtime = self._current_mtime()
            self.models = load_models(self.path)
            self.error = None
        except UserError as exc:
            self.models = ()
            self.error = str(exc)

    def _current_mtime(self) -> float | None:
        try:
            return self.path.stat().st_mtime if self.path is not None else None
        except OSError:
            return None

    def update_snapshot(self, snapshot: Snapshot) -> None:
        """Called by the app after each poll: follow free memory, reload an edited file."""
        if self.path is not None and self._current_mtime() != self.mtime:
            self._load()
            if self.is_mounted:
                self.query_one("#fit-source", Static).update(self._source_text())
        if self.catalog is None:
            return
        self.targets = targets_from_snapshot(snapshot, self.catalog)
        self.checks = [check(m, t) for t in self.targets for m in self.models]
        if self.is_mounted:
            self._refresh_table()

    def action_reload(self) -> None:
        self.mtime = None  # forces the next update to re-read
        self._load()
        self.query_one("#fit-source", Static).update(self._source_text())
        self.checks = [check(m, t) for t in self.targets for m in self.models]
        self._refresh_table()

    def action_back(self) -> None:
        self.app.pop_screen()

    # ---------------------------------------------------------------- render

    def _source_text(self) -> Text:
        if self.error:
            return Text(f"models file problem: {visible(self.error)}", style="bold red")
        where = shown(self.path) if self.path else "?"
        text = Text(f"Models: {where} ({self.origin}), {len(self.models)} model(s). ")
        text.append("Estimates are for PyTorch; speed is rough.", style="dim")
        return text

    def _refresh_table(self) -> None:
        table = self.query_one("#fit-table", DataTable)
        cursor = table.cursor_row
        table.clear()
        for i, c in enumerate(self.checks):
            e = c.chosen
            peak = e.peak_bytes
            gpu = (
                f"{c.target.index}: {c.target.name}"
                if c.target.index is not None
                else c.target.name
            )
            table.add_row(
                # Text, not str: DataTable parses str cells as markup. visible(): the models
                # file is someone else's text (idempotent where fit/ already made it safe).
                Text(visible(c.model.name)),
                Text(visible(gpu)),
                c.recommended,
                gib(peak),
                memory_bar(c.target, peak),
                verdict_text(e.verdict_free or e.verdict),
                verdict_text(e.verdict),
                batch_text(
                    e.max_batch_size_free if e.max_batch_size_free is not None else e.max_batch_size
                ),
                key=str(i),
            )
        if self.checks:
            table.move_cursor(row=min(max(cursor, 0), len(self.checks) - 1))
            self._show_detail(table.cursor_row)
        else:
            self.query_one("#fit-detail", Static).update(self._empty_text())

    def _empty_text(self) -> Text:
        if self.error:
            return Text("Fix the models file; it is re-read when it changes.", style="dim")
        if not self.targets:
            return Text("No GPU with readable memory in this snapshot.", style="dim")
        return Text("The models file has no models.", style="dim")

    @on(DataTable.RowHighlighted, "#fit-table")
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._show_detail(event.cursor_row)

    def _show_detail(self, row: int) -> None:
        if not 0 <= row < len(self.checks):
            return
        self.selected = row
        self.query_one("#fit-detail", Static).update(self.detail(self.checks[row]))

    def detail(self, c: ModelCheck) -> Group:
        m = c.model
        e = c.chosen
        head = Text()
        head.append(visible(m.name), style="bold")
        head.append(
            f"  {m.kind}, {c.mode}, {m.optimizer}, batch {c.batch_size}; {m.params:,} params "
            f"({m.trainable_params:,} trainable); {flops_text(m.flops)}/sample forward\n"
        )
        head.append(f"Recommended {c.recommended}: {c.recommended_reason}\n")
        head.append(f"Peak {gib(e.peak_bytes)} during {e.peak_phase}\n", style="bold")
        return Group(
            head,
            self._breakdown_table(e),
            self._precision_table(c),
            self._layers_table(m),
            self._ranking_table(m),
        )

    def _breakdown_table(self, e: PrecisionEstimate) -> Table:
        t = Table(title="Memory at the peak", title_justify="left", expand=False)
        parts = e.breakdown.as_dict()
        for key in parts:
            t.add_column(key.replace("_", " "), justify="right")
        t.add_row(*(gib(v) for v in parts.values()))
        return t

    def _precision_table(self, c: ModelCheck) -> Table:
        t = Table(title="Precisions", title_justify="left")
        for label in (
            "precision",
            "offered",
            "peak",
            "total",
            "max batch",
            "now",
            "max batch now",
            "samples/s (rough)",
        ):
            t.add_column(label, justify="right" if label != "precision" else "left")
        for e in c.estimates:
            t.add_row(
                ("* " if e.precision == c.recommended else "") + e.precision,
                "yes" if e.offered else "no",
                gib(e.peak_bytes),
                verdict_text(e.verdict),
                batch_text(e.max_batch_size),
                verdict_text(e.verdict_free),
                batch_text(e.max_batch_size_free),
                f"{e.speed.samples_per_s:,.0f}" if e.speed else "-",
            )
        return t

    def _layers_table(self, m: ModelSpec) -> Table:
        t = Table(title="Layers", title_justify="left")
        for label in ("net", "#", "layer", "output shape", "params", "FLOPs", "kept/sample (fp32)"):
            t.add_column(label, justify="right" if label not in ("net", "layer") else "left")
        nets = (
            [("", m.network)]
            if m.network is not None
            else [("G", m.generator), ("D", m.discriminator)]
        )
        for label, net in nets:
            if net is None:
                continue
            shape = net.input_shape
            for layer in net.layers:
                d = layer_dict(layer, shape)
                shape = layer.output_shape
                t.add_row(
                    label,
                    str(layer.index),
                    Text(visible(layer.type)),
                    str(tuple(layer.output_shape)),
                    f"{layer.params:,}",
                    flops_text(layer.flops),
                    gib(d["saved_bytes_per_sample_fp32"]),
                )
        return t

    def _ranking_table(self, m: ModelSpec, top: int = 10) -> Table:
        if m.name not in self._rankings and self.catalog is not None:
            self._rankings[m.name] = rank_cards(m, self.catalog.cards, self.catalog.architectures)
        t = Table(
            title=f"Other cards (top {top}, recommended precision each)", title_justify="left"
        )
        for label in (
            "#",
            "card",
            "precision",
            "memory",
            "verdict",
            "max batch",
            "samples/s (rough)",
        ):
            t.add_column(label, justify="left" if label in ("card", "precision") else "right")
        for i, r in enumerate(self._rankings.get(m.name, [])[:top]):
            t.add_row(
                str(i + 1),
                Text(r.card.name),
                r.precision,
                gib(r.card.memory_bytes),
                verdict_text(r.estimate.verdict),
                batch_text(r.estimate.max_batch_size),
                f"{r.samples_per_s:,.0f}" if r.samples_per_s is not None else "-",
            )
        return t
