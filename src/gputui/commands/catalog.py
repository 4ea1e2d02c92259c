"""`gputui catalog`: list, show, match and compare the GPU cards in the shipped catalog.

Only argparse at import time: the catalog (pydantic, TOML) loads inside `run`.
A catalog folder is written by hand, or by someone else (`--catalog-dir`): the
text output is made visible (textsafe) line by line as it is written, so no
name or note from a card file reaches the terminal as a control character.
JSON needs no such layer: json.dumps escapes every control character.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from gputui.catalog import Card, Catalog

ACTIONS = ("list", "show", "match", "compare")


def _listing_options(parser: argparse.ArgumentParser, *, suppress: bool) -> None:
    default: Any = argparse.SUPPRESS if suppress else None
    parser.add_argument(
        "--json",
        action="store_true",
        default=argparse.SUPPRESS if suppress else False,
        help="print JSON instead of a table",
    )
    parser.add_argument(
        "--arch", metavar="KEY", default=default, help="only this architecture (e.g. ampere)"
    )
    parser.add_argument(
        "--sort",
        metavar="FIELD",
        default=default,
        help="sort by a card field, numbers largest first (e.g. fp16_tensor_tflops, memory_gib)",
    )


def register(sub: Any) -> None:
    p = sub.add_parser(
        "catalog",
        help="list, show, match and compare GPUs in the catalog",
        description="The GPU catalog. Without an action, lists the cards.",
    )
    p.add_argument(
        "--catalog-dir", type=Path, default=None, help=argparse.SUPPRESS
    )  # a catalog folder to use instead of the shipped one (tests, data editing)
    _listing_options(p, suppress=False)
    actions = p.add_subparsers(dest="action", metavar="ACTION")

    listing = actions.add_parser("list", help="list the cards (the default)")
    _listing_options(listing, suppress=True)

    show = actions.add_parser("show", help="one card with all its figures and architecture notes")
    show.add_argument("name", nargs="+", help="catalog or NVML name (quotes optional)")
    show.add_argument("--json", action="store_true", default=argparse.SUPPRESS)

    match = actions.add_parser("match", help="which catalog card an NVML name is")
    match.add_argument("nvml_name", help='the name NVML reports, e.g. "NVIDIA A100-SXM4-40GB"')
    match.add_argument(
        "--memory-mib", type=int, default=None, help="memory total NVML reports (MiB)"
    )
    match.add_argument("--cc", default=None, help="compute capability, e.g. 8.6")
    match.add_argument("--json", action="store_true", default=argparse.SUPPRESS)

    compare = actions.add_parser("compare", help="cards side by side, with ratios to the first")
    compare.add_argument(
        "names", nargs="+", metavar="NAME", help="two or more card names (quote names with spaces)"
    )
    compare.add_argument("--json", action="store_true", default=argparse.SUPPRESS)

    p.set_defaults(run=run, action=None)


def run(args: argparse.Namespace) -> int:
    from gputui.catalog import load_catalog

    catalog = load_catalog(getattr(args, "catalog_dir", None))
    action = getattr(args, "action", None) or "list"
    as_json = bool(getattr(args, "json", False))
    with _visible_stdout():
        return _dispatch(catalog, action, as_json, args)


#: 16 TiB: far over any GPU's memory, and a bound for a number from the command line.
MAX_MEMORY_MIB = 16 << 20


def _dispatch(catalog: Catalog, action: str, as_json: bool, args: argparse.Namespace) -> int:
    if action == "show":
        return _show(catalog, " ".join(args.name), as_json)
    if action == "match":
        if args.memory_mib is not None and not 1 <= args.memory_mib <= MAX_MEMORY_MIB:
            from gputui.core.errors import UserError

            raise UserError(
                f"--memory-mib: {args.memory_mib} is out of range (1 to {MAX_MEMORY_MIB})"
            )
        return _match(catalog, args.nvml_name, args.memory_mib, args.cc, as_json)
    if action == "compare":
        return _compare(catalog, args.names, as_json)
    return _list(catalog, getattr(args, "arch", None), getattr(args, "sort", None), as_json)


class _VisibleWriter:
    """A text stream that writes each line made visible (newlines kept) to `stream`."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        from gputui.core.textsafe import visible

        self._stream.write("\n".join(visible(line) for line in text.split("\n")))
        return len(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


@contextlib.contextmanager
def _visible_stdout() -> Iterator[None]:
    saved = sys.stdout
    sys.stdout = _VisibleWriter(saved)
    try:
        yield
    finally:
        sys.stdout = saved


def _print_json(data: Any) -> None:
    import json

    # The models refuse NaN and infinity; allow_nan=False keeps the output valid JSON
    # even if a future field slipped past them (it raises rather than print `NaN`).
    print(json.dumps(data, indent=2, allow_nan=False))


def card_json(card: Card) -> dict[str, Any]:
    """Every Card field, unknown figures as null."""
    return card.model_dump(mode="json")


def _table(headers: list[str] | list[list[str]], rows: list[list[str]], right: set[int]) -> str:
    """Columns as wide as their widest cell; a header may be several lines (wrapped names)."""
    head_lines = [[h] if isinstance(h, str) else h for h in headers]
    widths = [max((len(line) for line in h), default=0) for h in head_lines]
    for row in rows:
        widths = [max(w, len(cell)) for w, cell in zip(widths, row, strict=False)]

    def line(cells: list[str]) -> str:
        parts = [
            cell.rjust(w) if i in right else cell.ljust(w)
            for i, (cell, w) in enumerate(zip(cells, widths, strict=True))
        ]
        return "  ".join(parts).rstrip()

    depth = max(len(h) for h in head_lines)
    header_rows = [
        [h[i - (depth - len(h))] if i >= depth - len(h) else "" for h in head_lines]
        for i in range(depth)
    ]
    return "\n".join([*map(line, header_rows), line(["-" * w for w in widths]), *map(line, rows)])


def _wrap_name(name: str, width: int) -> list[str]:
    """A card name over as many lines as needed to stay within `width` (words kept whole)."""
    import textwrap

    return textwrap.wrap(name, width, break_long_words=False) or [name]


def _terminal_width() -> int:
    import shutil

    return shutil.get_terminal_size((80, 24)).columns


DERIVED_MARK = "*"
DERIVED_NOTE = "* derived by an architecture rule, not printed by NVIDIA (gputui catalog show)"
THIRD_PARTY_MARK = "^"
THIRD_PARTY_NOTE = "^ a third-party figure, not NVIDIA's (gputui catalog show names the source)"


def _cell(card: Card, field: str) -> str:
    """A figure as the tables print it, marked when it is derived."""
    from gputui.catalog.present import fmt

    text = fmt(getattr(card, field))
    if text == "-":
        return text
    if card.is_third_party(field):
        return text + THIRD_PARTY_MARK
    return text + DERIVED_MARK if card.is_derived(field) else text


def _list(catalog: Catalog, arch: str | None, sort: str | None, as_json: bool) -> int:
    from gputui.catalog.present import fmt, sort_cards

    cards = list(catalog.cards_of(arch) if arch else catalog.cards)
    if sort:
        cards = sort_cards(cards, sort)
    if as_json:
        _print_json([card_json(c) for c in cards])
        return 0
    headers = [
        "Card",
        "Arch",
        "CC",
        "Memory GiB",
        "BW GB/s",
        "FP16 TF",
        "BF16 TF",
        "FP8 TF",
        "TDP W",
        "Year",
        "Price $",
    ]
    rows = [
        [
            c.name,
            catalog.architectures[c.architecture].name,
            c.compute_capability,
            fmt(c.memory_gib),
            _cell(c, "memory_bandwidth_gbs"),
            _cell(c, "fp16_tensor_tflops"),
            _cell(c, "bf16_tensor_tflops"),
            _cell(c, "fp8_tensor_tflops"),
            _cell(c, "tdp_w"),
            fmt(c.launch_year),
            fmt(c.launch_price_usd),
        ]
        for c in cards
    ]
    print(_table(headers, rows, right=set(range(3, len(headers)))))
    print(
        f"\n{len(cards)} cards; tensor figures are dense (no sparsity), FP16/BF16 with FP32 accumulate."
    )
    if any(c.derived for c in cards):
        print(DERIVED_NOTE)
    if any(c.third_party for c in cards):
        print(THIRD_PARTY_NOTE)
    return 0


_FIELD_LABELS = {
    "nvml_names": "NVML names",
    "sm_count": "SMs",
    "cuda_cores": "CUDA cores",
    "tensor_cores": "Tensor cores",
    "boost_clock_mhz": "Boost clock (MHz)",
    "memory_gib": "Memory (GiB)",
    "memory_bus_width_bits": "Memory bus (bits)",
    "memory_data_rate_gbps": "Memory data rate (Gbps/pin)",
    "memory_bandwidth_gbs": "Memory bandwidth (GB/s)",
    "launch_price_usd": "Launch price (USD)",
    "compute_capability": "Compute capability",
    "fp16_tensor_tflops": "FP16 tensor TFLOPS (FP32 acc.)",
    "fp16_acc16_tensor_tflops": "FP16 tensor TFLOPS (FP16 acc.)",
    "bf16_tensor_tflops": "BF16 tensor TFLOPS",
    "tf32_tensor_tflops": "TF32 tensor TFLOPS",
    "int8_tensor_tops": "INT8 tensor TOPS",
    "fp8_tensor_tflops": "FP8 tensor TFLOPS",
    "fp32_tflops": "FP32 TFLOPS",
    "fp16_tflops": "FP16 TFLOPS (CUDA cores)",
    "chip": "Chip",
    "tdp_w": "TDP (W)",
    "mig": "MIG",
    "nvlink": "NVLink",
}


def _label(field: str) -> str:
    return _FIELD_LABELS.get(field, field.replace("_", " ").capitalize())


def _show(catalog: Catalog, name: str, as_json: bool) -> int:
    import textwrap

    from gputui.catalog.present import fmt

    card = catalog.find(name)
    arch = catalog.architectures[card.architecture]
    if as_json:
        _print_json({"card": card_json(card), "architecture": arch.model_dump(mode="json")})
        return 0
    print(card.name)
    print("=" * len(card.name))
    width = max(len(_label(f)) for f in type(card).model_fields)
    for field in type(card).model_fields:
        if field in {
            "name",
            "source",
            "consistency_notes",
            "derived",
            "derived_rule",
            "third_party",
            "third_party_source",
        }:
            continue
        value = fmt(getattr(card, field))
        if card.is_derived(field):
            value += "  (derived)"
        if card.is_third_party(field):
            value += "  (third-party)"
        print(f"{_label(field).ljust(width)}  {value}")
    print()
    print(textwrap.fill(f"Source: {card.source}", 100, subsequent_indent="  "))
    if card.derived:
        fields = ", ".join(_label(f) for f in card.derived)
        print(textwrap.fill(f"Derived: {fields}", 100, subsequent_indent="  "))
        print(textwrap.fill(f"  by the rule: {card.derived_rule}", 100, subsequent_indent="    "))
    if card.third_party:
        fields = ", ".join(_label(f) for f in card.third_party)
        print(textwrap.fill(f"Third-party: {fields}", 100, subsequent_indent="  "))
        print(textwrap.fill(f"  from: {card.third_party_source}", 100, subsequent_indent="    "))
    if card.consistency_notes:
        print(textwrap.fill(f"Notes: {card.consistency_notes}", 100, subsequent_indent="  "))
    print()
    print(f"{arch.name} (compute capability {', '.join(arch.compute_capabilities)}, {arch.year})")
    precisions = ", ".join(arch.tensor_precisions) or "none (no tensor cores)"
    print(f"  Tensor precisions: {precisions}")
    for feature in arch.features:
        print(f"  - {feature}")
    print()
    print(textwrap.fill(" ".join(arch.notes.split()), 100))
    return 0


def _match(
    catalog: Catalog, nvml_name: str, memory_mib: int | None, cc: str | None, as_json: bool
) -> int:
    result = catalog.match(nvml_name, memory_mib, cc)
    code = 0 if result.status == "card" else 1
    if as_json:
        _print_json(
            {
                "status": result.status,
                "card": card_json(result.card) if result.card else None,
                "architecture": result.architecture.name if result.architecture else None,
                "candidates": list(result.candidates),
            }
        )
        return code
    if result.status == "card" and result.card is not None:
        print(f"card: {result.card.name}")
    elif result.status == "ambiguous":
        print(f"ambiguous: could be {'; '.join(result.candidates)}")
        if memory_mib is None:
            print("  (give --memory-mib to tell them apart)")
    elif result.status == "architecture" and result.architecture is not None:
        arch = result.architecture
        print(f"card not in catalog; architecture {arch.name}")
        precisions = ", ".join(arch.tensor_precisions) or "none (no tensor cores)"
        print(f"  tensor cores accelerate: {precisions}")
        if result.candidates:
            print(f"  (same name, other memory size: {'; '.join(result.candidates)})")
    else:
        print("unknown: not in the catalog" + ("" if cc else "; give --cc to get its architecture"))
    return code


def _compare(catalog: Catalog, names: list[str], as_json: bool) -> int:
    from gputui.catalog.present import compare
    from gputui.core.errors import UserError

    if len(names) < 2:
        raise UserError("compare needs at least two card names")
    cards = [catalog.find(n) for n in names]
    rows = compare(cards)
    if as_json:
        _print_json(
            {
                "cards": [c.name for c in cards],
                "rows": [
                    {
                        "field": r.field,
                        "values": list(r.values),
                        "ratios": list(r.ratios),
                        "derived": [c.is_derived(r.field) for c in cards],
                    }
                    for r in rows
                ],
            }
        )
        return 0
    print(compare_table(cards, _terminal_width()))
    print(f"\nRatios are to {cards[0].name}; tensor figures are dense.")
    if any(c.is_derived(r.field) for c in cards for r in rows):
        print(DERIVED_NOTE)
    return 0


def compare_table(cards: list[Card], width: int) -> str:
    """Cards side by side within `width` columns: names wrap, numbers are never cut.

    With ratios when they fit; otherwise ratios go to a second block, so every value
    is still printed whole.
    """
    from gputui.catalog.present import compare, fmt_ratio

    rows = compare(cards)
    label_width = max(len(r.label) for r in rows)

    def value_cells(with_ratio: bool) -> list[list[str]]:
        out = []
        for r in rows:
            cells = []
            for i, (card, q) in enumerate(zip(cards, r.ratios, strict=True)):
                text = _cell(card, r.field)
                if with_ratio and i > 0 and q is not None and text != "-":
                    text = f"{text} ({fmt_ratio(q)})"
                cells.append(text)
            out.append(cells)
        return out

    def render(with_ratio: bool) -> str | None:
        cells = value_cells(with_ratio)
        value_width = max(len(c) for row in cells for c in row)
        columns = len(cards)
        # Names wrap to the widest value, or wider if the room is there.
        room = (width - label_width - 2 * columns) // columns
        name_width = max(value_width, min(room, max(len(c.name) for c in cards)))
        total = label_width + columns * (name_width + 2)
        if total > width and name_width > value_width:
            name_width = value_width
            total = label_width + columns * (name_width + 2)
        if total > width:
            return None
        headers: list[list[str]] = [[""], *(_wrap_name(c.name, name_width) for c in cards)]
        body = [[r.label, *row] for r, row in zip(rows, cells, strict=True)]
        return _table(headers, body, right=set(range(1, columns + 1)))

    table = render(True)
    if table is not None:
        return table
    plain = render(False) or _table(
        ["", *[c.name for c in cards]],
        [[r.label, *row] for r, row in zip(rows, value_cells(False), strict=True)],
        right=set(range(1, len(cards) + 1)),
    )
    ratio_lines = [
        f"  {r.label}: "
        + ", ".join(
            f"{c.name} {fmt_ratio(q)}" for c, q in zip(cards[1:], r.ratios[1:], strict=True) if q
        )
        for r in rows
        if any(r.ratios[1:])
    ]
    return plain + "\n\nRatios to the first card:\n" + "\n".join(ratio_lines)
