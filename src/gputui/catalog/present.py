"""Shared wording and arithmetic for showing cards: the CLI and the TUI print the same things.

Kept free of any terminal library so the numbers (ratios, sort orders) are tested once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Any, get_args, get_origin, get_type_hints

from gputui.catalog.models import Card
from gputui.core.errors import UserError

# (field, label) pairs compared side by side, in display order.
COMPARE_FIELDS: tuple[tuple[str, str], ...] = (
    ("memory_gib", "Memory (GiB)"),
    ("memory_bandwidth_gbs", "Bandwidth (GB/s)"),
    ("fp32_tflops", "FP32 (TFLOPS)"),
    ("fp16_tensor_tflops", "FP16 tensor (TFLOPS)"),
    ("bf16_tensor_tflops", "BF16 tensor (TFLOPS)"),
    ("fp8_tensor_tflops", "FP8 tensor (TFLOPS)"),
    ("int8_tensor_tops", "INT8 tensor (TOPS)"),
    ("tdp_w", "TDP (W)"),
    ("launch_price_usd", "Launch price (USD)"),
)


def _is_numeric(annotation: Any) -> bool:
    """int or float, also inside Optional[...] and Annotated[..., Bounds(...)] (range checks)."""
    if annotation in (int, float):
        return True
    if get_origin(annotation) is Annotated:
        return _is_numeric(get_args(annotation)[0])
    return any(_is_numeric(arg) for arg in get_args(annotation) if arg is not type(None))


NUMERIC_FIELDS: frozenset[str] = frozenset(
    name
    for name, hint in get_type_hints(Card, include_extras=True).items()
    if name in Card.model_fields and _is_numeric(hint)
)
TEXT_SORT_FIELDS: frozenset[str] = frozenset(
    {"name", "architecture", "compute_capability", "segment", "memory_type"}
)
SORTABLE_FIELDS: tuple[str, ...] = tuple(
    name for name in Card.model_fields if name in NUMERIC_FIELDS | TEXT_SORT_FIELDS
)


@dataclass(frozen=True, slots=True)
class ComparisonRow:
    field: str
    label: str
    values: tuple[float | None, ...]
    ratios: tuple[float | None, ...]  # value / first card's value; None when either is unknown


def ratio(value: float | None, reference: float | None) -> float | None:
    if value is None or reference is None or reference == 0:
        return None
    return value / reference


def compare(cards: Sequence[Card]) -> list[ComparisonRow]:
    """One row per compared figure, with each card's ratio to the first card."""
    rows: list[ComparisonRow] = []
    for field, label in COMPARE_FIELDS:
        values = tuple(_number(getattr(card, field)) for card in cards)
        first = values[0] if values else None
        rows.append(ComparisonRow(field, label, values, tuple(ratio(v, first) for v in values)))
    return rows


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def sort_cards(cards: Sequence[Card], field: str) -> list[Card]:
    """Numbers descending (largest first), text ascending; unknown values always last."""
    if field not in SORTABLE_FIELDS:
        raise UserError(f"cannot sort by {field!r}; valid fields: {', '.join(SORTABLE_FIELDS)}")
    known = [c for c in cards if getattr(c, field) is not None]
    unknown = [c for c in cards if getattr(c, field) is None]
    if field in NUMERIC_FIELDS:
        known.sort(key=lambda c: (-float(getattr(c, field)), c.name))
    elif field == "compute_capability":
        known.sort(key=lambda c: (tuple(int(p) for p in c.compute_capability.split(".")), c.name))
    else:
        known.sort(key=lambda c: (str(getattr(c, field)).casefold(), c.name))
    return known + unknown


def fmt(value: Any) -> str:
    """A figure as people read it: '-' when unknown, no '.0' on whole numbers."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if value.is_integer():
            return f"{int(value):,}" if abs(value) >= 10000 else str(int(value))
        text = f"{value:.2f}".rstrip("0").rstrip(".") if abs(value) < 100 else f"{value:.1f}"
        return f"{value:,.1f}" if abs(value) >= 10000 else text
    if isinstance(value, int):
        return f"{value:,}" if abs(value) >= 10000 else str(value)
    if isinstance(value, list):
        return ", ".join(str(v) for v in value) if value else "-"
    return str(value)


def fmt_ratio(value: float | None) -> str:
    return "-" if value is None else f"x{value:.2f}"
