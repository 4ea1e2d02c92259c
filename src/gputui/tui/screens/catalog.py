"""`c`: the GPU catalog as a filterable table, with the installed GPUs marked.

Selecting a card shows it next to an installed one with ratios, which is the question
people bring to this screen: "how much faster/bigger is that card than mine?". On a box
with several GPUs the comparison follows the one the user chose: the GPU selected on the
dashboard when the screen opened, then `g` to step through the installed GPUs. A GPU
that is lost or gives no data is named with its reason and never compared: its card's
figures would read as if the GPU were there to run on.
"""

from __future__ import annotations

import textwrap
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
from gputui.core.errors import UserError
from gputui.fit.core.power import tflops_per_watt
from gputui.model.snapshot import DeviceInfo, DeviceSnapshot, Snapshot

INSTALLED_MARK = "●"
DERIVED_MARK = "*"  # a figure computed by an architecture rule, not printed by NVIDIA
LABEL_MIN = 12  # the comparison's label column may wrap down to this
DETAIL_MIN_WIDTH = 56  # the comparison panel's width in the .tcss
DETAIL_CHROME = 4  # its left border, padding and scrollbar gutter (see the .tcss)
TABLE_MIN_WIDTH = 24  # what the card list keeps when the panel widens
NAME_MIN = 11  # card names in the comparison wrap to at least this width ("(GPU 12)")
NAME_MAX = 20  # and at most this
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
    ("bf16_per_w", "BF16 TF/W"),  # bf16 tensor TFLOPS per watt of the power limit
)


def _padding(columns: int) -> int:
    """Cells the comparison table's padding takes: one each side of every column."""
    return 2 * columns


def _figure(card: Card, field: str) -> str:
    """A figure as shown on this screen: marked when it is derived."""
    text = fmt(getattr(card, field))
    return text + DERIVED_MARK if card.is_derived(field) and text != "-" else text


def _per_watt(card: Card) -> str:
    """bf16 tensor TFLOPS per watt, marked like the figure it comes from."""
    text = fmt(tflops_per_watt(card))
    derived = card.is_derived("bf16_tensor_tflops") or card.is_derived("tdp_w")
    return text + DERIVED_MARK if derived and text != "-" else text


def comparison_unavailable(dev: DeviceSnapshot) -> str | None:
    """Why an installed GPU cannot stand for its card in a comparison, or None.

    Lost (fell off the bus, NVML errors) or no data at all. A GPU that reads but does not
    report one field (its memory, say) is still the card it is: it stays comparable.
    """
    if dev.failed is not None:
        return dev.failed
    if dev.sample is None:
        return "no data from this GPU"
    return None


def _installed_pair(item: DeviceInfo | DeviceSnapshot) -> tuple[DeviceInfo, str | None]:
    if isinstance(item, DeviceSnapshot):
        return item.info, comparison_unavailable(item)
    return item, None


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
            mark = INSTALLED_MARK if card.name in installed_names else ""
            table.add_row(
                Text(mark, style="bold green"),
                card.name,
                self.catalog.architectures[card.architecture].name,
                *(
                    Text(_figure(card, field), justify="right")
                    for field in (
                        "memory_gib",
                        "memory_bandwidth_gbs",
                        "fp16_tensor_tflops",
                        "bf16_tensor_tflops",
                        "tdp_w",
                        "launch_year",
                        "launch_price_usd",
                    )
                ),
                Text(_per_watt(card), justify="right"),
                key=card.name,
            )
        if keep_cursor and table.row_count:
            table.move_cursor(row=min(max(cursor, 0), table.row_count - 1))

    def _compared(self, card: Card) -> list[Card]:
        """The chosen GPU's card then `card`, or `card` alone (no reference, or the same)."""
        reference = self.reference
        return [reference, card] if reference and reference.name != card.name else [card]

    def comparison(self, card: Card, width: int | None = None) -> Table:
        """The selected card beside the installed one (ratios to the installed card).

        Numbers are never cut: each value column is as wide as its widest number and does
        not wrap; only the labels and card names wrap. When `width` is too narrow for the
        ratio column it is dropped (the ratio stays readable from the two values).
        """
        reference = self.reference
        cards = self._compared(card)
        rows = compare(cards)
        values = [[_figure(c, r.field) for c in cards] for r in rows]
        ratios = [fmt_ratio(r.ratios[-1]) if r.ratios[-1] is not None else "" for r in rows]
        show_ratio = len(cards) > 1
        value_widths = [max(len(v[i]) for v in values) for i in range(len(cards))]
        ratio_width = max(len(q) for q in ratios) if show_ratio else 0
        if width is not None and show_ratio:
            base = self._name_widths(cards, value_widths, ratio_width, None, grow=False)
            needed = LABEL_MIN + sum(base) + ratio_width + _padding(len(cards) + 2)
            show_ratio = needed <= width
        table = Table(box=None, padding=(0, 1), title=None, show_edge=False)
        table.add_column("", min_width=LABEL_MIN, overflow="fold")
        name_widths = self._name_widths(
            cards, value_widths, ratio_width if show_ratio else 0, width
        )
        for i, c in enumerate(cards):
            # Pre-wrapped: a no_wrap column would otherwise size itself to the whole name.
            name_width = name_widths[i]
            title = "\n".join(textwrap.wrap(c.name, name_width, break_long_words=False))
            if c is reference and self.target_gpu is not None:
                title += f"\n(GPU {self.target_gpu.index})"
            table.add_column(
                title,
                justify="right",
                style="bold" if i == len(cards) - 1 else "",
                no_wrap=True,
                min_width=max(value_widths[i], name_width),
            )
        if show_ratio:
            table.add_column("ratio", justify="right", no_wrap=True, min_width=ratio_width)
        for row, cells, q in zip(rows, values, ratios, strict=True):
            table.add_row(row.label, *cells, *([q] if show_ratio else []))
        return table

    @staticmethod
    def _name_widths(
        cards: Sequence[Card],
        value_widths: list[int],
        ratio_width: int,
        width: int | None,
        *,
        grow: bool = True,
    ) -> list[int]:
        """How wide each card's column is: its numbers, then as much of its name as fits."""
        base = [
            max(v, NAME_MIN, *(len(w) for w in c.name.split()))
            for c, v in zip(cards, value_widths, strict=True)
        ]
        if not grow:
            return base
        wanted = [max(b, min(len(c.name), NAME_MAX)) for c, b in zip(cards, base, strict=True)]
        if width is None:
            return wanted
        columns = len(cards) + 1 + (1 if ratio_width else 0)
        spare = width - LABEL_MIN - sum(base) - ratio_width - _padding(columns)
        out = []
        for b, w in zip(base, wanted, strict=True):
            extra = max(0, min(w - b, spare))
            spare -= extra
            out.append(b + extra)
        return out

    def comparison_width(self, card: Card) -> int:
        """Columns the comparison needs with every number and its ratio whole."""
        cards = self._compared(card)
        rows = compare(cards)
        widths = [max(len(_figure(c, r.field)) for r in rows) for c in cards]
        names = [max(NAME_MIN, *(len(w) for w in c.name.split())) for c in cards]
        widths = [max(w, n) for w, n in zip(widths, names, strict=True)]
        ratio = 5 if len(cards) > 1 else 0
        return LABEL_MIN + sum(widths) + ratio + _padding(len(cards) + 2)

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


def describe_match(result: MatchResult) -> str:
    if result.status == "card" and result.card is not None:
        return f"{INSTALLED_MARK} {result.card.name}"
    if result.status == "ambiguous":
        return f"one of {', '.join(result.candidates)}"
    if result.status == "architecture" and result.architecture is not None:
        return f"card not in catalog ({result.architecture.name})"
    return "not in the catalog"
