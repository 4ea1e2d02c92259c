"""A layer model's facts, shared by its text and JSON: per-node rows, what it keeps for
autograd, the tensors alive at the peak, and the software its speed assumed."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from gputui.fit.core.phased import PhasedModel
from gputui.fit.graph.estimate import ModelCheck
from gputui.fit.graph.memory import autograd_flags
from gputui.fit.graph.stats import LayerStats
from gputui.fit.graph.step_ops import has_convolutions
from gputui.fit.importers.modelsfile import ModelSpec, Network


def layer_saved_elements(layer: LayerStats) -> int:
    """Elements per sample this layer itself makes autograd keep (shared tensors counted here too)."""
    kept = sum(s.elements for s in layer.internal_saved if s.kind != "cpu_only")
    if layer.saves_output:
        kept += layer.output_elements
    return kept


# bytes per element of what a layer keeps, training in fp32 on CUDA
_KEPT_BYTES = {"act": 4, "mask": 1, "index": 8, "stat": 4, "cpu_only": 0, "amp_copy": 0}


def layer_dict(
    layer: LayerStats,
    input_shapes: Sequence[tuple[int, ...]],
    name: str | None = None,
    inputs: list[str] | None = None,
    *,
    records: bool = True,
    trains: bool = True,
) -> dict[str, Any]:
    """One node's row: `input_shapes` are its own inputs' (a Multiply keeps both of them).

    `records` / `trains`: whether the node records autograd and whether its own weights
    train (fit.graph.tensors.autograd_flags): a frozen layer keeps no input for a weight
    gradient, and a node nothing upstream of it trains keeps nothing at all, as the
    memory walk counts them."""
    if not records:
        saved = kept_bytes = 0
    else:
        saved = layer_saved_elements(layer)
        kept_bytes = sum(s.elements * _KEPT_BYTES[s.kind] for s in layer.internal_saved)
    if records and layer.saves_output:
        kept_bytes += layer.output_elements * 4
    if records and (layer.saves_input or (layer.saves_input_if_trainable and trains)):
        # the inputs autograd keeps, as the memory walk counts them (fit/graph/memory.py)
        slots = layer.saved_slots if layer.saved_slots is not None else range(len(input_shapes))
        n = sum(math.prod(input_shapes[k]) for k in slots if k < len(input_shapes))
        saved += n
        kept_bytes += n * 4
    out: dict[str, Any] = {}
    if name is not None:
        out["name"] = name
    if inputs is not None:
        out["inputs"] = inputs
    return {
        **out,
        "index": layer.index,
        "type": layer.type,
        "output_shape": list(layer.output_shape),
        "params": layer.params,
        "trainable_params": layer.trainable_params,
        "non_trainable_params": layer.non_trainable_params,
        "flops": layer.flops,
        "saved_elements_per_sample": saved,
        "saved_bytes_per_sample_fp32": kept_bytes,
    }


def ref_name(net: Network, ref: tuple[int, int]) -> str:
    """How a graph names a value: "conv", "lstm:1", or a model input's name."""
    src, k = ref
    name = net.inputs[-1 - src].name if src < 0 else net.nodes[src].name
    return f"{name}:{k}" if k else name


def network_layers(net: Network) -> list[dict[str, Any]]:
    _, active, _ = autograd_flags(net)
    return [
        layer_dict(
            node.stats,
            node.input_shapes,
            node.name,
            [ref_name(net, r) for r in node.inputs],
            records=active[i],
            trains=node.trains,
        )
        for i, node in enumerate(net.nodes)
    ]


def model_layers(model: ModelSpec | PhasedModel) -> dict[str, Any]:
    """{"layers": rows}, or the generator's and the discriminator's rows of a GAN; a
    phased front-end's own facts under its kind ({"torch": {...}})."""
    if not isinstance(model, ModelSpec):
        return {model.kind: model.facts()}
    if model.network is not None:
        return {"layers": network_layers(model.network)}
    assert model.generator is not None and model.discriminator is not None
    return {
        "generator_layers": network_layers(model.generator),
        "discriminator_layers": network_layers(model.discriminator),
    }


def peak_tensor_rows(c: ModelCheck, top: int | None = None) -> list[dict[str, Any]]:
    """Tensors alive at the recommended precision's peak, summed by (layer, what), largest first."""
    sums: dict[tuple[str, str], int] = {}
    for t in c.peak_tensors:
        key = (t.layer, t.what)
        sums[key] = sums.get(key, 0) + t.bytes_per_sample * c.batch_size + t.fixed_bytes
    rows = [
        {"layer": layer, "what": what, "bytes": n}
        for (layer, what), n in sorted(sums.items(), key=lambda kv: -kv[1])
        if n
    ]
    return rows[:top] if top is not None else rows


def model_software_dict(model: ModelSpec | PhasedModel) -> dict[str, Any]:
    """What the speed assumed of the framework (fit.core.software): layout and optimizer kernels."""
    from gputui.fit.core.software import software_dict

    return software_dict(model.software, training=model.mode == "train")


def speed_assumes(model: ModelSpec | PhasedModel) -> str:
    """The text line saying which software settings the speed estimate assumed."""
    from gputui.fit.core.software import describe

    convolutions = has_convolutions(model) if isinstance(model, ModelSpec) else model.convolutions
    text = describe(model.software, training=model.mode == "train", convolutions=convolutions)
    return f"speed assumes: {text}"
