"""`c`: the GPU catalog as a filterable table, with the installed GPUs marked.

Selecting a card shows it next to the installed one with ratios, which is the question
people bring to this screen: "how much faster/bigger is that card than mine?".
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Input, Static

from gputui.catalog import Card, Catalog, MatchResult, load_catalog
from gputui.catalog.present import compare, fmt, fmt_ratio
from gputui.errors import UserError
from gputui.telemetry.snapshot import DeviceInfo

INSTALLED_MARK = "●"
COLUMNS: tuple[tuple[str, str], ...] = (
    ("installed", ""),
    ("name", "Card"),
    ("arch", "Arch"),
    ("memory", "Memory GiB"),
    ("bandwidth", "BW GB/s"),
    ("fp16", "FP16 TF"),
    ("bf16", "BF16 TF"),
    ("tdp", "TDP W"),
    ("year", "Year"),
    ("price", "Price $"),
)


def match_installed(catalog: Catalog, installed: Sequence[DeviceInfo]) -> list[MatchResult]:
    """The matcher's decision for each installed GPU, in device order."""
    results = []
    for info in installed:
        mib = None if info.memory_total is None else info.memory_total // (1024 * 1024)
        results.append(catalog.match(info.name, mib, info.compute_capability))
    return results


def card_matches_filter(card: Card, arch_name: str, text: str) -> bool:
    """Every word of the filter must appear in the card's names, architecture or cc."""
    haystack = " ".join(
        [
            card.name,
            *card.nvml_names,
            arch_name,
            card.architecture,
            card.compute_capability,
            card.segment,
        ]
    ).casefold()
    return all(word in haystack for word in text.casefold().split())


class CatalogScreen(Screen[None]):
    CSS_PATH = Path(__file__).with_name("catalog_screen.tcss")
    BINDINGS = [
        Binding("escape", "back", "Back"),
        Binding("slash", "focus_filter", "Filter", key_display="/"),
        Binding("c", "back", "Back", show=False),
    ]

    def __init__(
        self,
        installed: Sequence[DeviceInfo],
        catalog: Catalog | None = None,
        *,
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.installed = tuple(installed)
        self.catalog: Catalog | None = catalog
        self.error: str | None = None
        if self.catalog is None:
            try:
                self.catalog = load_catalog()
            except UserError as exc:
                self.error = str(exc)
        self.matches: list[MatchResult] = (
            match_installed(self.catalog, self.installed) if self.catalog else []
        )
        self.installed_cards: list[Card] = [m.card for m in self.matches if m.card is not None]
        self.selected: Card | None = None

    def compose(self) -> ComposeResult:
        with Vertical(id="catalog-main"):
            yield Static(self._installed_text(), id="catalog-installed")
            yield Input(
                placeholder="/ filter: name, architecture, cc…    enter on a card: compare it with the installed one",
                id="catalog-filter",
            )
            with Horizontal(id="catalog-body"):
                yield DataTable(id="catalog-table", cursor_type="row", zebra_stripes=True)
                yield Static(self._detail_hint(), id="catalog-detail")
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one("#catalog-table", DataTable)
        for key, label in COLUMNS:
            table.add_column(label, key=key)
        self._fill("")
        table.focus()

    # ----------------------------------------------------------------- content

    def _installed_text(self) -> Text:
        if self.error:
            return Text(f"catalog unavailable: {self.error}", style="bold red")
        if not self.installed:
            return Text("No GPU detected: browsing the catalog.", style="dim")
        text = Text()
        for info, result in zip(self.installed, self.matches, strict=True):
            if text:
                text.append("\n")
            text.append(f"GPU {info.index} {info.name}: ", style="bold")
            text.append(describe_match(result))
        return text

    def _detail_hint(self) -> str:
        return "enter: compare the selected card with the installed one\n/: filter   escape: back"

    def visible_cards(self, text: str) -> list[Card]:
        if self.catalog is None:
            return []
        archs = self.catalog.architectures
        return [
            c
            for c in self.catalog.cards
            if card_matches_filter(c, archs[c.architecture].name, text)
        ]

    def _fill(self, text: str) -> None:
        table = self.query_one("#catalog-table", DataTable)
        table.clear()
        if self.catalog is None:
            return
        installed_names = {c.name for c in self.installed_cards}
        for card in self.visible_cards(text):
            mark = INSTALLED_MARK if card.name in installed_names else ""
            table.add_row(
                Text(mark, style="bold green"),
                card.name,
                self.catalog.architectures[card.architecture].name,
                *(
                    Text(fmt(v), justify="right")
                    for v in (
                        card.memory_gib,
                        card.memory_bandwidth_gbs,
                        card.fp16_tensor_tflops,
                        card.bf16_tensor_tflops,
                        card.tdp_w,
                        card.launch_year,
                        card.launch_price_usd,
                    )
                ),
                key=card.name,
            )

    def comparison(self, card: Card) -> Table:
        """The selected card beside the installed one (ratios to the installed card)."""
        reference = self.installed_cards[0] if self.installed_cards else None
        cards = [reference, card] if reference and reference.name != card.name else [card]
        table = Table(box=None, padding=(0, 1), title=None, show_edge=False)
        table.add_column("")
        for i, c in enumerate(cards):
            title = f"{c.name}\n(installed)" if c is reference else c.name
            table.add_column(title, justify="right", style="bold" if i == len(cards) - 1 else "")
        for row in compare(cards):
            cells = [fmt(row.values[0])]
            for value, ratio in zip(row.values[1:], row.ratios[1:], strict=True):
                if value is None or ratio is None:
                    cells.append(fmt(value))
                else:
                    cells.append(f"{fmt(value)} {fmt_ratio(ratio)}")
            table.add_row(row.label, *cells)
        return table

    def _show_detail(self, card: Card) -> None:
        self.selected = card
        detail = self.query_one("#catalog-detail", Static)
        note = "" if self.installed_cards else "\n(no installed card matched: figures only)"
        arch = self.catalog.architectures[card.architecture] if self.catalog else None
        precisions = ", ".join(arch.tensor_precisions) if arch else ""
        footer = Text(
            f"{note}\n{arch.name if arch else ''} tensor precisions: {precisions or 'none'}",
            style="dim",
        )
        detail.update(Group(self.comparison(card), footer))
        detail.add_class("open")

    # ----------------------------------------------------------------- events

    @on(Input.Changed, "#catalog-filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        self._fill(event.value)

    @on(Input.Submitted, "#catalog-filter")
    def _filter_done(self) -> None:
        self.query_one("#catalog-table", DataTable).focus()

    @on(DataTable.RowSelected, "#catalog-table")
    def _row_selected(self, event: DataTable.RowSelected) -> None:
        if self.catalog is None or event.row_key.value is None:
            return
        self._show_detail(self.catalog.find(event.row_key.value))

    def action_focus_filter(self) -> None:
        self.query_one("#catalog-filter", Input).focus()

    def action_back(self) -> None:
        filt = self.query_one("#catalog-filter", Input)
        if filt.has_focus and filt.value:
            filt.value = ""
            self.query_one("#catalog-table", DataTable).focus()
            return
        self.app.pop_screen()


def describe_match(result: MatchResult) -> str:
    if result.status == "card" and result.card is not None:
        return f"{INSTALLED_MARK} {result.card.name}"
    if result.status == "ambiguous":
        return f"one of {', '.join(result.candidates)}"
    if result.status == "architecture" and result.architecture is not None:
        return f"card not in catalog ({result.architecture.name})"
    return "not in the catalog"
