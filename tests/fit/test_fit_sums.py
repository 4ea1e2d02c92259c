"""fit/core/sums.py: the breakdowns of both estimators add, scale and total item by item."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from gputui.fit.core.sums import ItemSums
from gputui.fit.graph.memory import ITEMS, Parts
from gputui.fit.transformer.memory import ITEMS as LLM_ITEMS
from gputui.fit.transformer.memory import Parts as LlmParts


def test_layer_parts_add_scale_and_total_by_item() -> None:
    a = Parts(weights=1, gradients=2, optimizer_state=3, activations=4, workspace=5)
    b = Parts(weights=10, activations=100)
    assert a + b == Parts(11, 2, 3, 104, 5)
    assert a.scaled(3) == Parts(3, 6, 9, 12, 15)
    assert a.total == 15 and isinstance(a.total, int)
    assert [getattr(a + b, k) for k in ITEMS] == [11, 2, 3, 104, 5]


def test_transformer_parts_keep_the_kv_cache_apart() -> None:
    a = LlmParts(weights=1.5, kv_cache=2.0)
    b = LlmParts(kv_cache=0.5, workspace=1.0)
    total = a + b
    assert [getattr(total, k) for k in LLM_ITEMS] == [1.5, 0, 0, 0, 2.5, 1.0]
    assert total.total == pytest.approx(5.0)
    assert a.scaled(2) == LlmParts(weights=3.0, kv_cache=4.0)


def test_a_single_item_is_not_a_breakdown() -> None:
    @dataclass(frozen=True, slots=True)
    class One(ItemSums[int]):
        only: int = 0

    with pytest.raises(TypeError, match="at least two items"):
        _ = One(1) + One(2)
