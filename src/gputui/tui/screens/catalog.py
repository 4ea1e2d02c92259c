"""`c`: the GPU catalog as a filterable table, with the installed GPUs marked.

Selecting a card shows it next to an installed one with ratios, which is the question
people bring to this screen: "how much faster/bigger is that card than mine?". On a box
with several GPUs the comparison follows the one the user chose: the GPU selected on the
dashboard when the screen opened, then `g` to step through the installed GPUs. A GPU
that is lost or gives no data is named with its reason and never compared: its card's
figures would read as if the GPU were there to run on. What is shown (the rows, the
comparison) is views/catalog_compare.py's; this screen holds the choice and the layout.
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
from gputui.core.errors import UserError
from gputui.model.snapshot import DeviceInfo, DeviceSnapshot, Snapshot
from gputui.tui.views.catalog_compare import (
    CARD_NARROW,
    CARD_NARROW_BELOW,
    COLUMNS,
    DERIVED_MARK,
    THIRD_PARTY_MARK,
    card_cells,
    card_matches_filter,
    compared,
    comparison_table,
    comparison_unavailable,
    comparison_width,
    describe_match,
    match_installed,
)

DETAIL_MIN_WIDTH = 56  # the comparison panel's width in the .tcss
DETAIL_CHROME = 4  # its left border, padding and scrollbar gutter (see the .tcss)
TABLE_MIN_WIDTH = 24  # what the card list keeps when the panel widens


def _installed_pair(item: DeviceInfo | DeviceSnapshot) -> tuple[DeviceInfo, str | None]:
    if isinstance(item, DeviceSnapshot):
        return item.info, comparison_unavailable(item)
    return item, None


class CatalogScreen(Screen[None]):
    CSS_PATH = Path(__file__).with_name("catalog_screen.tcss")
    BINDINGS = [
        Binding("escape", "back", "Back"),
        Binding("slash", "focus_filter", "Filter", key_display="/"),
        Binding("g", "next_gpu", "Next GPU"),
        Binding("c", "back", "Back", show=False),
    ]

    def __init__(
        self,
        installed: Sequence[DeviceInfo | DeviceSnapshot],
        catalog: Catalog | None = None,
        *,
        gpu: int | None = None,
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        """`installed`: the GPUs in device order; DeviceSnapshots say which are lost.

        `gpu`: the NVML index to compare with first (the dashboard's selection); by
        default the first GPU that is readable and whose card the catalog knows.
        """
        super().__init__(name=name, id=id, classes=classes)
        pairs = [_installed_pair(item) for item in installed]
        self.installed = tuple(info for info, _ in pairs)
        self.unavailable: tuple[str | None, ...] = tuple(reason for _, reason in pairs)
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
        self.selected: Card | None = None
        self.target: int = self._first_target(gpu)  # position in `installed`, not NVML index

    def _first_target(self, gpu: int | None) -> int:
        chosen = [i for i, info in enumerate(self.installed) if info.index == gpu]
        if chosen:
            return chosen[0]
        usable = [i for i, m in enumerate(self.matches) if self._comparable(i) and m.card]
        return usable[0] if usable else 0

    def _comparable(self, pos: int) -> bool:
        return 0 <= pos < len(self.installed) and self.unavailable[pos] is None

    @property
    def installed_cards(self) -> list[Card]:
        """The catalog cards of the installed GPUs that can be compared (lost ones left out)."""
        return [
            m.card for i, m in enumerate(self.matches) if m.card is not None and self._comparable(i)
        ]

    @property
    def target_gpu(self) -> DeviceInfo | None:
        """The installed GPU the comparison is against (it may be lost: see `reference`)."""
        return self.installed[self.target] if self.installed else None

    @property
    def reference(self) -> Card | None:
        """The chosen GPU's card, or None when it is lost, unreadable or not in the catalog."""
        if not self.matches or not self._comparable(self.target):
            return None
        return self.matches[self.target].card

    def target_text(self) -> str:
        """What the comparison is against, for the title line and the comparison's note."""
        info, reference = self.target_gpu, self.reference
        if info is None:
            return "not compared: no installed GPU"
        reason = self.unavailable[self.target]
        if reason is not None:
            return f"not compared: GPU {info.index} is unavailable ({reason})"
        if reference is None:
            return f"not compared: GPU {info.index}'s card is not in the catalog"
        return f"compared with GPU {info.index}: {reference.name}"

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
        # Under CARD_NARROW_BELOW columns a long card name is cut (enter shows it whole), so
        # that Price and BF16 TF/W stay on screen: at 120 columns Price was cut.
        narrow = self.app.size.width < CARD_NARROW_BELOW
        for key, label in COLUMNS:
            table.add_column(
                label, key=key, width=CARD_NARROW if narrow and key == "name" else None
            )
        self._fill("")
        table.focus()

    # ----------------------------------------------------------------- content

    def _installed_text(self) -> Text:
        if self.error:
            return Text(f"catalog unavailable: {self.error}", style="bold red")
        if not self.installed:
            return Text("No GPU detected: browsing the catalog.", style="dim")
        text = Text()
        several = len(self.installed) > 1
        if several:
            text.append(f"{self.target_text()}   (g: next of {len(self.installed)} GPUs)\n")
        rows = zip(self.installed, self.matches, self.unavailable, strict=True)
        for pos, (info, result, reason) in enumerate(rows):
            if pos:
                text.append("\n")
            if several:
                text.append("▶ " if pos == self.target else "  ", style="bold")
            text.append(f"GPU {info.index} {info.name}: ", style="bold")
            if reason is not None:
                text.append(f"unavailable: {reason}", style="bold red")
            else:
                text.append(describe_match(result))
        return text

    def update_snapshot(self, snapshot: Snapshot) -> None:
        """Called by the app after each poll: a GPU lost while this screen is open shows so."""
        by_index = {d.index: comparison_unavailable(d) for d in snapshot.devices}
        reasons = tuple(
            by_index.get(info.index, "no longer listed by the GPU source")
            for info in self.installed
        )
        if reasons == self.unavailable:
            return
        self.unavailable = reasons
        self._redraw()

    def action_next_gpu(self) -> None:
        """`g`: compare with the next installed GPU (in device order, wrapping)."""
        if len(self.installed) < 2:
            return
        self.target = (self.target + 1) % len(self.installed)
        self._redraw()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "next_gpu":
            return len(self.installed) > 1  # one GPU: nothing to step through, no footer key
        return True

    def _redraw(self) -> None:
        """The title line, the installed marks and the open comparison, after a change."""
        if not self.is_mounted:
            return
        self.query_one("#catalog-installed", Static).update(self._installed_text())
        self._fill(self.query_one("#catalog-filter", Input).value, keep_cursor=True)
        if self.selected is not None:
            self._show_detail(self.selected)

    def _detail_hint(self) -> str:
        more = "   g: next GPU" if len(self.installed) > 1 else ""
        return (
            "enter: compare the selected card with the installed one\n"
            f"/: filter{more}   escape: back"
        )

    def visible_cards(self, text: str) -> list[Card]:
        if self.catalog is None:
            return []
        archs = self.catalog.architectures
        return [
            c
            for c in self.catalog.cards
            if card_matches_filter(c, archs[c.architecture].name, text)
        ]

    def _fill(self, text: str, *, keep_cursor: bool = False) -> None:
        table = self.query_one("#catalog-table", DataTable)
        cursor = table.cursor_row if keep_cursor else 0
        table.clear()
        if self.catalog is None:
            return
        installed_names = {c.name for c in self.installed_cards}
        for card in self.visible_cards(text):
            table.add_row(*card_cells(card, self.catalog, installed_names), key=card.name)
        if keep_cursor and table.row_count:
            table.move_cursor(row=min(max(cursor, 0), table.row_count - 1))

    def _compared(self, card: Card) -> list[Card]:
        return compared(self.reference, card)

    def comparison(self, card: Card, width: int | None = None) -> Table:
        """The selected card beside the installed one (views/catalog_compare.py)."""
        gpu = self.target_gpu
        return comparison_table(self.reference, gpu.index if gpu else None, card, width)

    def comparison_width(self, card: Card) -> int:
        return comparison_width(self.reference, card)

    def _show_detail(self, card: Card) -> None:
        self.selected = card
        detail = self.query_one("#catalog-detail", Static)
        # Widen the panel when the numbers need it, leaving the card list some room.
        # On a narrow terminal the panel takes the whole width rather than run off screen.
        wanted = self.comparison_width(card) + DETAIL_CHROME
        available = self.size.width
        low = min(DETAIL_MIN_WIDTH, available - 4)
        high = max(available - TABLE_MIN_WIDTH, low)
        detail.styles.width = max(low, min(wanted, high))
        inner = int(detail.styles.width.value) - DETAIL_CHROME if detail.styles.width else None
        note = "" if self.reference else f"\n{self.target_text()}: figures only"
        arch = self.catalog.architectures[card.architecture] if self.catalog else None
        precisions = ", ".join(arch.tensor_precisions) if arch else ""
        lines = [f"{note}\n{arch.name if arch else ''} tensor precisions: {precisions or 'none'}"]
        derived = list(dict.fromkeys(c.name for c in self._compared(card) if c.derived))
        if derived:
            lines.append(
                f"{DERIVED_MARK} derived by an architecture rule, not printed by NVIDIA "
                f"({'; '.join(derived)}: rule in `gputui catalog show`)"
            )
        third = list(dict.fromkeys(c.name for c in self._compared(card) if c.third_party))
        if third:
            lines.append(
                f"{THIRD_PARTY_MARK} a third-party figure, not NVIDIA's "
                f"({'; '.join(third)}: source in `gputui catalog show`)"
            )
        footer = Text("\n".join(lines), style="dim")
        detail.update(Group(self.comparison(card, inner), footer))
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
