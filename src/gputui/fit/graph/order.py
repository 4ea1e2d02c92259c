"""The order a graph's layers are built in: every layer after what it reads.

Why a module of its own: a functional model may list its layers in any order, so
the builder needs a topological order, and a stable one (ties in file order) so
that phases and reports keep the file's order wherever the graph allows it.
"""

from __future__ import annotations

import heapq
from typing import Any

from gputui.core.errors import UserError


def graph_order(
    layers: list[Any],
    specs: list[list[tuple[str, int]]],
    local: dict[str, int],
    labels: list[str],
) -> list[int]:
    """Graph order, ties in file order (Kahn's algorithm on a heap of file positions)."""
    deps = [{local[n] for n, _ in spec if n in local} for spec in specs]
    for i, layer in enumerate(layers):
        target = layer.get("reuse")
        if isinstance(target, str) and target in local:
            deps[i].add(local[target])  # the reused layer is built at its first call
    waiting = [len(d) for d in deps]
    users: list[list[int]] = [[] for _ in layers]
    for i, d in enumerate(deps):
        for j in d:
            users[j].append(i)
    ready = [i for i, w in enumerate(waiting) if w == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        i = heapq.heappop(ready)
        order.append(i)
        for u in users[i]:
            waiting[u] -= 1
            if waiting[u] == 0:
                heapq.heappush(ready, u)
    if len(order) != len(layers):
        stuck = min(i for i, w in enumerate(waiting) if w > 0)
        raise UserError(f"{labels[stuck]}: inputs: the graph has a cycle through this layer")
    return order
