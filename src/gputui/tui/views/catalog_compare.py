"""The Catalog screen's contents, Textual-free: which installed GPUs match which cards,
the filter, one card's table row, and the comparison of a card with the installed one.

The comparison's numbers are never cut: each value column is as wide as its widest
number and does not wrap; only the labels and card names wrap. The screen
(screens/catalog.py) chooses the cards and the width and puts the result on screen.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

from rich.table import Table
from rich.text import Text

from gputui.catalog import Card, Catalog, MatchResult
from gputui.catalog.present import compare, fmt, fmt_ratio
from gputui.fit import tflops_per_watt
from gputui.model.snapshot import DeviceInfo, DeviceSnapshot

INSTALLED_MARK = "●"
DERIVED_MARK = "*"  # a figure computed by an architecture rule, not printed by NVIDIA
THIRD_PARTY_MARK = "^"  # a figure from a named third party (catalog `third_party`)
LABEL_MIN = 12  # the comparison's label column may wrap down to this
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
CARD_NARROW_BELOW = 140  # columns under which the Card column is capped
CARD_NARROW = 24


def _padding(columns: int) -> int:
    """Cells the comparison table's padding takes: one each side of every column."""
    return 2 * columns


def figure(card: Card, field: str) -> str:
    """A figure as shown on this screen: marked when it is derived or from a third party."""
    text = fmt(getattr(card, field))
    if text == "-":
        return text
    if card.is_third_party(field):
        return text + THIRD_PARTY_MARK
    return text + DERIVED_MARK if card.is_derived(field) else text


def per_watt(card: Card) -> str:
    """bf16 tensor TFLOPS per watt, marked like the figures it comes from."""
    text = fmt(tflops_per_watt(card))
    if text == "-":
        return text
    fields = ("bf16_tensor_tflops", "tdp_w")
    if any(card.is_third_party(f) for f in fields):
        return text + THIRD_PARTY_MARK
    return text + DERIVED_MARK if any(card.is_derived(f) for f in fields) else text


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


def card_cells(card: Card, catalog: Catalog, installed_names: set[str]) -> tuple[Text | str, ...]:
    """One card's row in the catalog table, marked when it is an installed GPU's card."""
    mark = INSTALLED_MARK if card.name in installed_names else ""
    return (
        Text(mark, style="bold green"),
        card.name,
        catalog.architectures[card.architecture].name,
        *(
            Text(figure(card, field), justify="right")
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
        Text(per_watt(card), justify="right"),
    )


def compared(reference: Card | None, card: Card) -> list[Card]:
    """The chosen GPU's card then `card`, or `card` alone (no reference, or the same)."""
    return [reference, card] if reference and reference.name != card.name else [card]


def comparison_table(
    reference: Card | None, gpu_index: int | None, card: Card, width: int | None = None
) -> Table:
    """The selected card beside the installed one (ratios to the installed card); the
    installed card's column says which GPU it is (`gpu_index`).

    Numbers are never cut: each value column is as wide as its widest number and does
    not wrap; only the labels and card names wrap. When `width` is too narrow for the
    ratio column it is dropped (the ratio stays readable from the two values).
    """
    cards = compared(reference, card)
    rows = compare(cards)
    values = [[figure(c, r.field) for c in cards] for r in rows]
    ratios = [fmt_ratio(r.ratios[-1]) if r.ratios[-1] is not None else "" for r in rows]
    show_ratio = len(cards) > 1
    value_widths = [max(len(v[i]) for v in values) for i in range(len(cards))]
    ratio_width = max(len(q) for q in ratios) if show_ratio else 0
    if width is not None and show_ratio:
        base = name_widths(cards, value_widths, ratio_width, None, grow=False)
        needed = LABEL_MIN + sum(base) + ratio_width + _padding(len(cards) + 2)
        show_ratio = needed <= width
    table = Table(box=None, padding=(0, 1), title=None, show_edge=False)
    table.add_column("", min_width=LABEL_MIN, overflow="fold")
    widths = name_widths(cards, value_widths, ratio_width if show_ratio else 0, width)
    for i, c in enumerate(cards):
        # Pre-wrapped: a no_wrap column would otherwise size itself to the whole name.
        name_width = widths[i]
        title = "\n".join(textwrap.wrap(c.name, name_width, break_long_words=False))
        if c is reference and gpu_index is not None:
            title += f"\n(GPU {gpu_index})"
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


def name_widths(
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


def comparison_width(reference: Card | None, card: Card) -> int:
    """Columns the comparison needs with every number and its ratio whole."""
    cards = compared(reference, card)
    rows = compare(cards)
    widths = [max(len(figure(c, r.field)) for r in rows) for c in cards]
    names = [max(NAME_MIN, *(len(w) for w in c.name.split())) for c in cards]
    widths = [max(w, n) for w, n in zip(widths, names, strict=True)]
    ratio = 5 if len(cards) > 1 else 0
    return LABEL_MIN + sum(widths) + ratio + _padding(len(cards) + 2)


def describe_match(result: MatchResult) -> str:
    if result.status == "card" and result.card is not None:
        return f"{INSTALLED_MARK} {result.card.name}"
    if result.status == "ambiguous":
        return f"one of {', '.join(result.candidates)}"
    if result.status == "architecture" and result.architecture is not None:
        return f"card not in catalog ({result.architecture.name})"
    return "not in the catalog"
