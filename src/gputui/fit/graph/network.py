"""A model as a graph of layer calls: what the memory walk and the reports read.

A sequential stack is a chain; a functional model is a directed acyclic graph
whose nodes are listed in the order Keras runs them (graph order, ties in file
order). Every node knows which outputs of which nodes (or model inputs) it
reads, the shapes it read, and whose weights it uses, so that a layer called
twice (shared weights) counts its parameters once but its activations twice.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from gputui.fit.graph.stats import LayerStats

Shape = tuple[int, ...]
# (source, output index): source >= 0 is a node's position, source < 0 the model input -1 - k
Ref = tuple[int, int]


@dataclass(frozen=True, slots=True)
class ModelInput:
    name: str
    shape: Shape
    integer: bool  # token ids (int64 in PyTorch), else float data

    @property
    def elements(self) -> int:
        return math.prod(self.shape)


@dataclass(frozen=True, slots=True)
class Node:
    """One call of a layer."""

    name: str  # unique in the model ("enc_a/conv" inside a block call)
    label: str  # how phases and errors name it: "Conv2D 'conv' (layers[3])"
    stats: LayerStats  # parameters counted here only for the call that owns the weights
    inputs: tuple[Ref, ...]
    input_shapes: tuple[Shape, ...]
    weights: str  # name of the node whose weights it uses (itself unless reused)
    weight_trainable: int  # trainable parameters of those weights (shared: the owner's)
    raw: Mapping[str, Any]  # the layer's arguments (the reused layer's, for a reuse)

    @property
    def trains(self) -> bool:
        return self.weight_trainable > 0

    @property
    def shared(self) -> bool:
        return self.weights != self.name


@dataclass(frozen=True, slots=True)
class Network:
    inputs: tuple[ModelInput, ...]
    nodes: tuple[Node, ...]
    outputs: tuple[Ref, ...]
    warnings: tuple[str, ...] = ()
    losses: tuple[str, ...] = ()  # one per output

    # ----- what the sequential-era callers read
    @property
    def input_shape(self) -> Shape:
        return self.inputs[0].shape

    @property
    def integer_input(self) -> bool:
        return self.inputs[0].integer

    @property
    def layers(self) -> tuple[LayerStats, ...]:
        return tuple(n.stats for n in self.nodes)

    @property
    def raw_layers(self) -> tuple[Mapping[str, Any], ...]:
        return tuple(n.raw for n in self.nodes)

    @property
    def input_elements(self) -> int:
        return sum(i.elements for i in self.inputs)

    def shape_of(self, ref: Ref) -> Shape:
        src, k = ref
        if src < 0:
            return self.inputs[-1 - src].shape
        stats = self.nodes[src].stats
        return stats.output_shape if k == 0 else stats.extra_outputs[k - 1]

    @property
    def output_shape(self) -> Shape:
        return self.shape_of(self.outputs[0])

    @property
    def trainable_params(self) -> int:
        return sum(n.stats.trainable_params for n in self.nodes)

    @property
    def non_trainable_params(self) -> int:
        return sum(n.stats.non_trainable_params for n in self.nodes)

    @property
    def params(self) -> int:
        return self.trainable_params + self.non_trainable_params

    @property
    def flops(self) -> int:
        return sum(n.stats.flops for n in self.nodes)

    @property
    def is_chain(self) -> bool:
        return len(self.inputs) == 1 and all(
            n.inputs == ((i - 1, 0),) if i else n.inputs == ((-1, 0),)
            for i, n in enumerate(self.nodes)
        )


def frozen_copy(net: Network) -> Network:
    """The same graph with no trainable weights (D inside the GAN's generator step)."""
    nodes = tuple(
        replace(
            n,
            stats=replace(
                n.stats,
                trainable_params=0,
                non_trainable_params=n.stats.params,
                saves_input_if_trainable=False,
                backward_param_transient=0,
            ),
            weight_trainable=0,
        )
        for n in net.nodes
    )
    return replace(net, nodes=nodes)


def compose(first: Network, second: Network, prefix: str = "") -> Network:
    """`second` fed by `first`'s output 0 (a GAN's generator then its discriminator)."""
    offset = len(first.nodes)

    def moved(ref: Ref) -> Ref:
        src, k = ref
        if src < 0:
            return first.outputs[0]
        return (src + offset, k)

    nodes = first.nodes + tuple(
        replace(
            n,
            name=prefix + n.name,
            weights=prefix + n.weights,
            inputs=tuple(moved(r) for r in n.inputs),
        )
        for n in second.nodes
    )
    return Network(first.inputs, nodes, tuple(moved(r) for r in second.outputs))
