"""fit/core: one breakdown for every model kind; it adds, scales and totals item by item."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from gputui.fit.core.batch import largest_batch
from gputui.fit.core.breakdown import ITEMS, LAYER_ITEMS, Overheads, Parts
from gputui.fit.core.sums import ItemSums


def test_layer_parts_add_scale_and_total_by_item() -> None:
    a = Parts(weights=1, gradients=2, optimizer_state=3, activations=4, workspace=5)
    b = Parts(weights=10, activations=100)
    assert a + b == Parts(11, 2, 3, 104, 0, 5)
    assert a.scaled(3) == Parts(3, 6, 9, 12, 0, 15)
    assert a.total == 15 and isinstance(a.total, int)  # integer bytes stay integers
    assert [getattr(a + b, k) for k in LAYER_ITEMS] == [11, 2, 3, 104, 5]


def test_transformer_parts_keep_the_kv_cache_apart() -> None:
    a = Parts(weights=1.5, kv_cache=2.0)
    b = Parts(kv_cache=0.5, workspace=1.0)
    total = a + b
    assert [getattr(total, k) for k in ITEMS] == [1.5, 0, 0, 0, 2.5, 1.0]
    assert total.total == pytest.approx(5.0)
    assert a.scaled(2) == Parts(weights=3.0, kv_cache=4.0)


def test_a_breakdown_reports_only_the_items_of_its_kind() -> None:
    over = Overheads(cuda_context=100, slack=0.5, library=4)
    parts = Parts(weights=10.2, activations=5, workspace=1)
    layer = over.breakdown(parts, LAYER_ITEMS)
    assert "kv_cache" not in layer.as_dict()
    assert list(layer.as_dict()) == [*LAYER_ITEMS, "cuda_context", "allocator"]
    llm = over.breakdown(parts)
    assert list(llm.as_dict()) == [*ITEMS, "cuda_context", "allocator"]
    # 10.2 rounds up to 11; the library workspace is added to the workspace item
    assert (layer.weights, layer.workspace) == (11, 5)
    assert layer.tensor_bytes == 11 + 5 + 5
    assert layer.allocator == int(21 * 0.5)
    assert layer.total == 21 + 100 + 10 == over.total(parts)


def test_the_largest_batch_is_the_last_that_fits() -> None:
    # one moment: 1000 fixed + 300 per sample, 10 % slack, a 50-byte context
    def peak(b: int) -> int:
        tensor = 1000 + 300 * b
        return tensor + 50 + int(tensor * 0.1)

    for limit in (1000, 1150, 1430, 1500, 5000, 10**6):
        got = largest_batch([(1000, 300)], limit, peak, scale=1.1, context=50, cap=1 << 20)
        want = max((b for b in range(0, 4000) if b == 0 or peak(b) <= limit), default=0)
        assert got == (want if peak(0) <= limit else 0), limit
    assert largest_batch([(0, 1)], 10**9, lambda b: b, scale=1, context=0, cap=64) == 64


def test_a_single_item_is_not_a_breakdown() -> None:
    @dataclass(frozen=True, slots=True)
    class One(ItemSums[int]):
        only: int = 0

    with pytest.raises(TypeError, match="at least two items"):
        _ = One(1) + One(2)
