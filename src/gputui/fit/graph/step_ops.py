"""A layer model's whole step as roofline ops: the graph front-end's speed adapter.

The graph walk (`network_ops`) gives every node's kernels in forward order, the
optimizer step and AMP's casts follow (`optimizer_ops`), a GAN's step runs its two
networks as fit/graph/memory.py does; fit/core/roofline.py times the list and
fit/core/speed.py makes the one `Speed` of it (`model_speed`). The op list depends on
the model, precision, batch and mode, not on the card, so it is built once and cached
for a ranking over every card.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from typing import Protocol

from gputui.catalog.models import Architecture, Card
from gputui.fit.core.optimizer_traffic import (
    BERTADAM_TRAFFIC,
    FUSED_TRAFFIC,
    OPTIMIZER_TRAFFIC,
    foreach_launches,
)
from gputui.fit.core.phased import PhasedModel
from gputui.fit.core.power import SAMPLES
from gputui.fit.core.precision import Precision, policy
from gputui.fit.core.roofline import Compiled, Op, Profile, best_profile, compile_ops
from gputui.fit.core.software import DEFAULT_SOFTWARE, OptimizerImpl, Software
from gputui.fit.core.speed import PhaseRate, Speed, Timing, card_speed
from gputui.fit.graph.attention_ops import attention_ops
from gputui.fit.graph.memory import autograd_flags, input_bytes
from gputui.fit.graph.network import Network, Ref, compose, frozen_copy
from gputui.fit.graph.ops import CONV_TYPES, LayerIO, layer_ops


class StepModel(Protocol):
    """What the step's ops read of a layer model (modelsfile.ModelSpec is one); a protocol
    so that the graph engine does not import the models-file parser."""

    @property
    def optimizer(self) -> str: ...
    @property
    def mode(self) -> str: ...
    @property
    def software(self) -> Software: ...
    @property
    def network(self) -> Network | None: ...
    @property
    def generator(self) -> Network | None: ...
    @property
    def discriminator(self) -> Network | None: ...
    @property
    def networks(self) -> tuple[Network, ...]: ...


def network_ops(
    net: Network,
    p: Precision,
    batch: int,
    *,
    training: bool,
    network: str = "",
    sw: Software = DEFAULT_SOFTWARE,
) -> list[Op]:
    """Every node's kernels through a network graph, in the order they run forward."""
    ops: list[Op] = []
    _, _, in_req = autograd_flags(net)
    width: dict[Ref, int] = {
        (-1 - k, 0): input_bytes(i.integer, p) for k, i in enumerate(net.inputs)
    }
    for i, node in enumerate(net.nodes):
        st = node.stats
        shapes = node.input_shapes or ((),)
        elements = [math.prod(s) if s else 1 for s in shapes]
        needs = any(in_req[i])
        io = LayerIO(
            sum(elements),
            shapes[0][-1] if shapes[0] else 1,
            sum(e * width.get(r, p.act_bytes) for e, r in zip(elements, node.inputs, strict=False)),
            needs,
            node.trains,
            training,
            node.label,
            i,
        )
        if st.type == "MultiHeadAttention":
            ops += attention_ops(st, node.raw, shapes, io, p, batch, network, sw)
        else:
            ops += layer_ops(st, io, p, batch, network, sw)
        out_w = 4 if (p.amp and st.autocast_fp32) else p.act_bytes
        for k in range(1 + len(st.extra_outputs)):
            width[(i, k)] = width.get(node.inputs[0], out_w) if st.output_is_view else out_w
    return ops


def optimizer_ops(
    nets: Sequence[Network],
    optimizer: str,
    p: Precision,
    network: str = "",
    impl: OptimizerImpl = "foreach",
) -> list[Op]:
    """The optimizer step (`impl`: PyTorch foreach, a fused kernel or a per-tensor loop)
    plus AMP's weight casts and grad unscale."""
    params = sum(n.trainable_params for n in nets)
    tensors = sum(
        len(layer.param_tensors) for n in nets for layer in n.layers if layer.trainable_params
    )
    if params == 0:
        return []
    accesses, foreach = OPTIMIZER_TRAFFIC[optimizer]
    launches = foreach_launches(params, tensors)
    width = max(p.weight_bytes, p.state_bytes, p.grad_bytes)
    ops: list[Op] = []
    if impl == "bertadam":  # BertAdam is an Adam; any other optimizer: its plain loop
        if optimizer in {"adam", "adamw"}:
            accesses, foreach = BERTADAM_TRAFFIC
        impl = "loop"
    if impl == "loop":
        for n in nets:
            for layer in n.layers:
                if not layer.trainable_params:
                    continue
                count = layer.trainable_params
                ops.append(
                    Op(
                        f"{optimizer} step (per-tensor loop, {layer.type})",
                        "elementwise",
                        "optimizer",
                        accesses * count,
                        accesses * count * width,
                        foreach * max(len(layer.param_tensors), 1),
                        network=network,
                    )
                )
    else:
        if impl == "fused":
            accesses, foreach = FUSED_TRAFFIC[optimizer], 1
        ops.append(
            Op(
                f"{optimizer} step" + (" (fused)" if impl == "fused" else ""),
                "elementwise",
                "optimizer",
                accesses * params,
                accesses * params * width,
                foreach * launches,
                network=network,
            )
        )
    if p.amp:
        copies = sum(layer.matmul_params for n in nets for layer in n.layers)
        layers = sum(1 for n in nets for layer in n.layers if layer.matmul_params)
        ops.append(
            Op(
                "autocast weight casts",
                "elementwise",
                "forward",
                copies,
                copies * (p.weight_bytes + p.low_copy_bytes),
                layers,
                network=network,
            )
        )
        if p.name == "amp_fp16":  # GradScaler: unscale and inf check of every gradient
            ops.append(
                Op(
                    "grad unscale",
                    "elementwise",
                    "optimizer",
                    params,
                    2 * params * p.grad_bytes,
                    launches,
                    network=network,
                )
            )
    return ops


# model_ops depends on the model, precision, batch and mode, not on the card: a
# ranking reuses one op list for every card. Keyed by the model's identity (models
# hold dicts, so they do not hash); the entry keeps the model alive, so an id in the
# cache is never a different, newer model.
_OPS_CACHE: dict[
    tuple[int, str, int, str, Software], tuple[StepModel, tuple[Op, ...], Compiled]
] = {}
_OPS_CACHE_SIZE = 64
# A network's kernels read a precision only through its byte sizes and, for NCHW
# convolutions' transposes, whether it has a tensor-core path (`_op_bytes`): amp_fp16
# and amp_bf16 run the same kernels, so do bf16 and fp16 (and fp32 and tf32 in a network
# without convolutions); the optimizer's ops (GradScaler's unscale) are added per precision.
_NET_CACHE: dict[
    tuple[int, tuple[int, ...], int, bool, Software],
    tuple[Network, tuple[Op, ...], Compiled],
] = {}


def _op_bytes(p: Precision, net: Network) -> tuple[int, ...]:
    """What network_ops (layer_ops, attention_ops) read of a precision for `net`."""
    tensor_path = p.tensor_key is not None and any(nd.stats.type in CONV_TYPES for nd in net.nodes)
    return (p.act_bytes, p.low_copy_bytes, p.weight_bytes, p.grad_bytes, tensor_path)


def _network_part(
    net: Network, p: Precision, batch: int, training: bool, sw: Software
) -> tuple[tuple[Op, ...], Compiled]:
    key = (id(net), _op_bytes(p, net), batch, training, sw)
    hit = _NET_CACHE.get(key)
    if hit is not None and hit[0] is net:
        return hit[1], hit[2]
    ops = tuple(network_ops(net, p, batch, training=training, sw=sw))
    compiled = compile_ops(ops)
    if len(_NET_CACHE) >= _OPS_CACHE_SIZE:
        _NET_CACHE.pop(next(iter(_NET_CACHE)), None)
    _NET_CACHE[key] = (net, ops, compiled)
    return ops, compiled


def _cached_ops(
    model: StepModel,
    precision: str,
    batch: int,
    mode: str | None,
    sw: Software | None = None,
) -> tuple[tuple[Op, ...], Compiled]:
    sw = model.software if sw is None else sw
    key = (id(model), precision, batch, mode or model.mode, sw)
    hit = _OPS_CACHE.get(key)
    if hit is not None and hit[0] is model:
        return hit[1], hit[2]
    if model.network is not None:  # _model_ops' first case, its network part shared
        p = policy(precision)
        training = (mode or model.mode) == "train" and p.training
        net_ops, net_compiled = _network_part(model.network, p, batch, training, sw)
        extra: tuple[Op, ...] = ()
        if training:
            extra = tuple(optimizer_ops((model.network,), model.optimizer, p, impl=sw.optimizer))
        ops, compiled = net_ops + extra, net_compiled + compile_ops(extra)
    else:
        ops = tuple(_model_ops(model, precision, batch, mode, sw))
        compiled = compile_ops(ops)
    if len(_OPS_CACHE) >= _OPS_CACHE_SIZE:
        _OPS_CACHE.pop(next(iter(_OPS_CACHE)), None)
    _OPS_CACHE[key] = (model, ops, compiled)
    return ops, compiled


def model_ops(
    model: StepModel,
    precision: str,
    batch: int,
    mode: str | None = None,
    sw: Software | None = None,
) -> list[Op]:
    """One step of `model` as ops: a training step with its optimizer, or a forward pass.

    `sw`: how the framework runs it; None: what the model says (`ModelSpec.software`)."""
    return list(_cached_ops(model, precision, batch, mode, sw)[0])


def _model_ops(
    model: StepModel,
    precision: str,
    batch: int,
    mode: str | None,
    sw: Software = DEFAULT_SOFTWARE,
) -> list[Op]:
    p = policy(precision)
    mode = mode or model.mode
    training = mode == "train" and p.training
    if model.network is not None:
        ops = network_ops(model.network, p, batch, training=training, sw=sw)
        if training:
            ops += optimizer_ops((model.network,), model.optimizer, p, impl=sw.optimizer)
        return ops
    gen, disc = model.generator, model.discriminator
    assert gen is not None and disc is not None
    if not training:
        return network_ops(gen, p, batch, training=False, network="generator", sw=sw)
    # memory.py's step: fakes, D on a real and a generated batch, then G through frozen D
    ops = network_ops(gen, p, batch, training=False, network="generator", sw=sw)
    for _ in range(2):
        ops += network_ops(disc, p, batch, training=True, network="discriminator", sw=sw)
    ops += optimizer_ops((disc,), model.optimizer, p, "discriminator", sw.optimizer)
    combined = compose(gen, frozen_copy(disc), prefix="discriminator/")
    ngen = len(gen.nodes)
    for op in network_ops(combined, p, batch, training=True, sw=sw):
        if op.layer is not None and op.layer >= ngen:  # D's layers, frozen: input grads only
            op = replace(op, layer=op.layer - ngen, network="discriminator")
        else:
            op = replace(op, network="generator")
        ops.append(op)
    ops += optimizer_ops((gen,), model.optimizer, p, "generator", sw.optimizer)
    return ops


def has_convolutions(model: StepModel) -> bool:
    """Whether `model` runs convolutions on tensor cores, the ops `Software.memory_format`
    changes (depthwise ones run on the CUDA cores in either layout)."""
    return any(layer.type in CONV_TYPES for n in model.networks for layer in n.layers)


def profile(
    model: StepModel,
    card: Card,
    architecture: Architecture | None,
    precision: str,
    batch: int,
    mode: str | None = None,
    sw: Software | None = None,
) -> Profile | None:
    """The roofline step time of `model` on `card`; None when a figure it needs is unknown.

    `sw`: the framework's layout and optimizer implementation (`Software`); None: the
    model's own (`ModelSpec.software`, from the models file or the command line)."""
    return best_profile(
        card,
        architecture,
        precision,
        batch,
        lambda prec: _cached_ops(model, prec, batch, mode, sw),
    )


def model_speed(
    model: StepModel | PhasedModel,
    card: Card,
    precision: str,
    batch: int,
    mode: str | None = None,
    architecture: Architecture | None = None,
) -> Speed:
    """Rough samples/s of `model`'s step on `card` (fit.core.speed's policy: unknown with
    the reason, and a floor, where the card lacks a figure the roofline needs). A layer
    model's ops come from its graph; any other phased front-end (fit/core/phased.py)
    gives its own op list, timed by the same roofline."""

    def ops_for(prec: str) -> tuple[Sequence[Op], Compiled]:
        if isinstance(model, PhasedModel):
            return model.step_ops(prec, batch)
        return _cached_ops(model, prec, batch, mode, None)

    def time(c: Card) -> Timing | None:
        prof = best_profile(c, architecture, precision, batch, ops_for)
        if prof is None:
            return None
        rate = PhaseRate(prof.samples_per_s, prof.bound, prof.step_time_s, prof.shares[prof.bound])
        return Timing({"step": rate}, prof)

    return card_speed(card, architecture, precision, SAMPLES, time)
