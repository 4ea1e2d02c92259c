"""What each value of a layer graph costs: its bytes per sample, its owner, its lifetime.

Shared by the training walk (train_walk.py), the inference pass and the eval
loss (memory.py, eval_loss.py) and the roofline's traffic (fit/core/roofline.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from gputui.fit.core.overheads import Backend
from gputui.fit.core.precision import Precision
from gputui.fit.graph.network import Network, Ref
from gputui.fit.graph.stats import LayerStats


@dataclass(frozen=True, slots=True)
class LiveTensor:
    """A tensor alive at one moment: which layer made it and what it is."""

    layer: str
    what: str  # "output", "saved by NAME", "kept inside", "gradient", ...
    bytes_per_sample: int
    fixed_bytes: int = 0


def _mask_bytes(p: Precision, backend: Backend) -> int:
    # CUDA's fused dropout keeps a bool mask; the CPU path keeps the scaled noise tensor
    return 1 if backend == "cuda" else p.act_bytes


def saved_bytes(layer: LayerStats, p: Precision, backend: Backend) -> int:
    size = {
        "act": p.act_bytes,
        "mask": _mask_bytes(p, backend),
        "index": 8,
        "stat": 4,
        "cpu_only": p.act_bytes if backend == "cpu" else 0,
        "amp_copy": 4 if p.amp else 0,
    }
    return sum(s.elements * size[s.kind] for s in layer.internal_saved)


def out_bytes(layer: LayerStats, p: Precision) -> int:
    return 4 if p.amp and layer.autocast_fp32 else p.act_bytes


def input_bytes(integer: bool, p: Precision) -> int:
    """Per element of a model input: int64 token ids, else fp32 data (16-bit when pure 16)."""
    return 8 if integer else (4 if p.weight_bytes == 4 else p.act_bytes)


def batch_bytes(net: Network, p: Precision) -> int:
    """The data batch per sample, plus autocast's 16-bit copy of float inputs under AMP."""
    total = 0
    for inp in net.inputs:
        total += inp.elements * input_bytes(inp.integer, p)
        if p.amp and not inp.integer:
            total += inp.elements * p.act_bytes
    return total


def optimizer_temp(
    optimizer: str, trainable: int, largest_tensor: int, p: Precision, backend: Backend
) -> int:
    """Temporaries of one optimizer step (PyTorch defaults: foreach on CUDA, a loop on CPU)."""
    if optimizer in ("adam", "adamw"):
        # sqrt(exp_avg_sq) for every tensor at once (foreach) / sqrt then divide per tensor
        return (
            trainable * p.state_bytes if backend == "cuda" else 2 * largest_tensor * p.state_bytes
        )
    if optimizer == "rmsprop":
        return trainable * p.state_bytes if backend == "cuda" else largest_tensor * p.state_bytes
    return 0


@dataclass(slots=True)
class Values:
    """Storage of every value of a graph: which tensor owns it and its bytes per sample."""

    owner: dict[Ref, Ref]
    size: dict[Ref, int]  # owner -> bytes per sample
    grad: dict[Ref, int]  # value -> bytes per sample of its gradient
    made: dict[Ref, int]  # owner -> position of the node that made it (-1: model input)
    last: dict[Ref, int]  # owner -> position of its last reader in the forward pass


def values_of(net: Network, p: Precision) -> Values:
    owner: dict[Ref, Ref] = {}
    size: dict[Ref, int] = {}
    grad: dict[Ref, int] = {}
    made: dict[Ref, int] = {}
    last: dict[Ref, int] = {}
    per_el: dict[Ref, int] = {}
    for k, inp in enumerate(net.inputs):
        ref = (-1 - k, 0)
        owner[ref] = ref
        per_el[ref] = input_bytes(inp.integer, p)
        size[ref] = inp.elements * per_el[ref]
        grad[ref] = size[ref]
        made[ref] = -1
        last[ref] = -1
    for i, node in enumerate(net.nodes):
        st = node.stats
        out = (i, 0)
        for r in node.inputs:
            o = owner[r]
            if last[o] < i:
                last[o] = i
        if st.output_is_view and node.inputs:
            o = owner[node.inputs[0]]
            owner[out] = o
            grad[out] = st.output_elements * per_el[o]
        else:
            owner[out] = out
            per_el[out] = out_bytes(st, p)
            size[out] = st.output_elements * per_el[out]
            grad[out] = size[out]
            made[out] = i
            last[out] = i
        for j, shape in enumerate(st.extra_outputs, 1):
            ref = (i, j)
            n = 1
            for d in shape:
                n *= d
            owner[ref] = ref
            per_el[ref] = p.act_bytes
            size[ref] = grad[ref] = n * p.act_bytes
            made[ref] = last[ref] = i
    n = len(net.nodes)
    for r in net.outputs:
        last[owner[r]] = n
    return Values(owner, size, grad, made, last)


def autograd_flags(net: Network) -> tuple[dict[Ref, bool], list[bool], list[list[bool]]]:
    """Which values need gradients, which nodes record autograd (an inactive node, e.g. a
    frozen layer before anything that trains, keeps nothing for backward), and per node
    which of its inputs need gradients. Model inputs never do."""
    req: dict[Ref, bool] = {(-1 - k, 0): False for k in range(len(net.inputs))}
    active = [False] * len(net.nodes)
    in_req: list[list[bool]] = []
    for i, node in enumerate(net.nodes):
        st = node.stats
        slots = [req[r] and not st.no_input_grad for r in node.inputs]
        in_req.append(slots)
        active[i] = any(slots) or node.trains
        req[(i, 0)] = active[i]
        for j in range(len(st.extra_outputs)):
            req[(i, j + 1)] = active[i]
    return req, active, in_req
