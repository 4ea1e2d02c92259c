"""Breakdowns of bytes by item that add, scale and total item by item.

The one breakdown by item (fit/core/breakdown.py's Parts), summed by the layer
walk and the transformer phases alike, is such a dataclass. A frozen, slotted
dataclass of numbers inherits `ItemSums` and gets `+`, `scaled` and `total` over
its fields, in field order.
"""

from __future__ import annotations

import dataclasses
import operator
from collections.abc import Callable
from typing import Any, Generic, TypeVar, cast

N = TypeVar("N", int, float)  # what the items count in: int bytes, or float (fractions)
S = TypeVar("S", bound="ItemSums[Any]")
_VALUES: dict[type, Callable[[Any], tuple[Any, ...]]] = {}


def _values_of(cls: type) -> Callable[[Any], tuple[Any, ...]]:
    """The field values of an instance of `cls`, as a tuple (one attrgetter per class)."""
    getter = _VALUES.get(cls)
    if getter is None:
        names = [f.name for f in dataclasses.fields(cls)]
        if len(names) < 2:  # attrgetter of one name returns the value, not a 1-tuple
            raise TypeError(f"{cls.__name__}: a breakdown needs at least two items")
        getter = _VALUES[cls] = operator.attrgetter(*names)
    return getter


class ItemSums(Generic[N]):
    """A mixin for dataclasses whose fields are all byte counts of type N.

    Generic over the fields but on the estimators' hot path (thousands of sums per
    walk): one cached attrgetter per class, no per-call field lookup.
    """

    __slots__ = ()

    def __add__(self: S, other: S) -> S:
        cls = type(self)
        values = _values_of(cls)
        return cast("Callable[..., S]", cls)(*map(operator.add, values(self), values(other)))

    def scaled(self: S, n: float) -> S:
        cls = type(self)
        return cast("Callable[..., S]", cls)(*[v * n for v in _values_of(cls)(self)])

    @property
    def total(self) -> N:
        """The sum of every item."""
        return cast(N, sum(_values_of(type(self))(self)))
