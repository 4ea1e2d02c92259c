"""Peak memory of one training step or one inference pass, as affine functions of the batch.

A training step is walked the way PyTorch runs it: the forward pass layer by
layer (everything autograd saved so far stays alive), then the backward pass
from the last layer down (saved tensors are freed once their last user has run,
parameter gradients appear layer by layer, the incoming and outgoing activation
gradients are alive together), then the optimizer step (all gradients, the
state and the optimizer's temporaries). Each moment is a `Phase` whose bytes are
`fixed + per_sample * batch`; the peak is the largest phase at a given batch,
so the largest batch that fits is solved exactly rather than searched.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from gputui.fit.config import OPTIMIZER_STATES, ModelSpec, Network
from gputui.fit.precision import Precision
from gputui.fit.stats import LayerStats

Backend = Literal["cuda", "cpu"]
ITEMS = ("weights", "gradients", "optimizer_state", "activations", "workspace")


@dataclass(frozen=True, slots=True)
class Parts:
    weights: int = 0
    gradients: int = 0
    optimizer_state: int = 0
    activations: int = 0
    workspace: int = 0

    def __add__(self, other: Parts) -> Parts:
        return Parts(*(getattr(self, k) + getattr(other, k) for k in ITEMS))

    def scaled(self, n: int) -> Parts:
        return Parts(*(getattr(self, k) * n for k in ITEMS))

    @property
    def total(self) -> int:
        return sum(getattr(self, k) for k in ITEMS)


@dataclass(frozen=True, slots=True)
class Phase:
    """One moment of the step: bytes = fixed + per_sample * batch."""

    name: str
    fixed: Parts
    per_sample: Parts

    def at(self, batch: int) -> Parts:
        return self.fixed + self.per_sample.scaled(batch)


def _mask_bytes(p: Precision, backend: Backend) -> int:
    # CUDA's fused dropout keeps a bool mask; the CPU path keeps the scaled noise tensor
    return 1 if backend == "cuda" else p.act_bytes


def _saved_bytes(layer: LayerStats, p: Precision, backend: Backend) -> int:
    size = {
        "act": p.act_bytes,
        "mask": _mask_bytes(p, backend),
        "index": 8,
        "stat": 4,
        "cpu_only": p.act_bytes if backend == "cpu" else 0,
        "amp_copy": 4 if p.amp else 0,
    }
    return sum(s.elements * size[s.kind] for s in layer.internal_saved)


def _out_bytes(layer: LayerStats, p: Precision) -> int:
    return 4 if p.amp and layer.autocast_fp32 else p.act_bytes


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


def train_phases(
    net: Network,
    p: Precision,
    backend: Backend,
    base: Parts,
    base_per_sample: Parts,
    *,
    prefix: str = "",
    grads_already_allocated: bool = False,
) -> list[Phase]:
    """Forward and backward phases of one pass through `net` (no optimizer step)."""
    layers = net.layers
    n = len(layers)
    # tensor ids: 0 is the batch; a view layer passes its input's id on
    in_bytes = 8 if net.integer_input else (4 if p.weight_bytes == 4 else p.act_bytes)
    size: dict[int, int] = {0: net.input_elements * in_bytes}
    ids_in: list[int] = []
    ids_out: list[int] = []
    current = 0
    for i, layer in enumerate(layers):
        ids_in.append(current)
        if not layer.output_is_view:
            current = i + 1
            size[current] = layer.output_elements * _out_bytes(layer, p)
        ids_out.append(current)
    # which layers record autograd, and which tensors they keep
    requires = False
    active: list[bool] = []
    in_requires: list[bool] = []
    trainable: list[bool] = []
    for layer in layers:
        has_w = layer.trainable_params > 0
        in_requires.append(requires)
        active.append(requires or has_w)
        trainable.append(has_w)
        requires = requires or has_w
    first_user: dict[int, int] = {}  # tensor id -> lowest layer position that saved it

    def save(tid: int, user: int) -> None:
        if tid != 0:
            first_user[tid] = min(first_user.get(tid, user), user)

    for i, layer in enumerate(layers):
        if not active[i]:
            continue
        if layer.saves_input or (layer.saves_input_if_trainable and trainable[i]):
            save(ids_in[i], i)
        if layer.saves_output:
            save(ids_out[i], i)
    if n and requires:
        save(ids_out[-1], n)  # the loss keeps the model's output
    internal = [
        _saved_bytes(layer, p, backend) if active[i] else 0 for i, layer in enumerate(layers)
    ]
    copies = [
        layer.matmul_params * p.low_copy_bytes if active[i] else 0 for i, layer in enumerate(layers)
    ]
    cast_input = net.input_elements * p.act_bytes if p.amp and not net.integer_input else 0
    batch = Parts(activations=size[0] + cast_input)
    grads = [layer.trainable_params * p.grad_bytes for layer in layers]
    phases: list[Phase] = []
    for i, layer in enumerate(layers):
        counted = {tid for tid, user in first_user.items() if user <= i}
        acts = sum(size[t] for t in counted)
        for tid in (ids_in[i], ids_out[i]):
            if tid != 0 and tid not in counted:
                acts += size[tid]
                counted.add(tid)
        acts += sum(internal[: i + 1]) + layer.forward_transient * p.act_bytes
        phases.append(
            Phase(
                f"{prefix}forward {layer.type} (layers[{i}])",
                base + Parts(weights=sum(copies[: i + 1])),
                base_per_sample + batch + Parts(activations=acts),
            )
        )
    total_grads = sum(grads)
    if n and requires:
        # the loss's backward: everything saved is alive, plus the output's gradient
        phases.append(
            Phase(
                f"{prefix}loss backward",
                base
                + Parts(
                    weights=sum(copies), gradients=total_grads if grads_already_allocated else 0
                ),
                base_per_sample
                + batch
                + Parts(
                    activations=sum(size[t] for t in first_user) + sum(internal),
                    workspace=size[ids_out[-1]] if ids_out[-1] != 0 else 0,
                ),
            )
        )
    for i in range(n - 1, -1, -1):
        layer = layers[i]
        if not active[i]:
            continue
        saved_here = sum(size[t] for t, user in first_user.items() if user <= i)
        acts = saved_here + sum(internal[: i + 1])
        grad_out = size[ids_out[i]] if ids_out[i] != 0 else 0
        grad_in = 0
        if in_requires[i] and not layer.output_is_view and ids_in[i] != 0:
            grad_in = size[ids_in[i]]
        if grads_already_allocated:
            live_grads = total_grads + grads[i]  # the new gradient before it is accumulated
            before_grads = total_grads
        else:
            live_grads = sum(grads[i:])
            before_grads = sum(grads[i + 1 :])
        weights = base + Parts(weights=sum(copies[: i + 1]))
        name = f"{prefix}backward {layer.type} (layers[{i}])"
        if layer.fused_activation != "none":
            # the activation's backward: its saved tensor, the incoming and its own gradient
            phases.append(
                Phase(
                    f"{name}, activation",
                    weights + Parts(gradients=before_grads),
                    base_per_sample
                    + batch
                    + Parts(activations=acts, workspace=2 * layer.output_elements * p.act_bytes),
                )
            )
            # then the layer's own backward, with what the activation kept already freed
            acts = sum(size[t] for t, user in first_user.items() if user < i)
            if first_user.get(ids_in[i]) == i:
                acts += size[ids_in[i]]
            acts += sum(internal[: i + 1])
            if layer.fused_activation == "input":
                acts -= layer.output_elements * p.act_bytes
        flowing = grad_out + grad_in + layer.backward_transient * p.act_bytes
        param_transient = layer.backward_param_transient * p.grad_bytes
        phases.append(
            Phase(
                name,
                weights + Parts(gradients=live_grads, workspace=param_transient),
                base_per_sample + batch + Parts(activations=acts, workspace=flowing),
            )
        )
    return phases


def inference_phases(
    net: Network, p: Precision, base: Parts, base_per_sample: Parts, prefix: str = ""
) -> list[Phase]:
    """A forward pass without autograd: only a layer's input, output and scratch are alive."""
    in_bytes = 8 if net.integer_input else (4 if p.weight_bytes == 4 else p.act_bytes)
    batch = net.input_elements * in_bytes
    phases = []
    prev = 0  # bytes per sample of the current input when it is not the batch itself
    for i, layer in enumerate(layers_of(net)):
        out = 0 if layer.output_is_view else layer.output_elements * _out_bytes(layer, p)
        copies = layer.matmul_params * p.low_copy_bytes
        transient = layer.forward_transient
        if layer.inference_transient is not None:
            transient = layer.inference_transient
        acts = batch + prev + out + transient * p.act_bytes
        phases.append(
            Phase(
                f"{prefix}forward {layer.type} (layers[{i}])",
                base + Parts(weights=copies),
                base_per_sample + Parts(activations=acts),
            )
        )
        if not layer.output_is_view:
            prev = out
    return phases


def layers_of(net: Network) -> tuple[LayerStats, ...]:
    return net.layers


def _weights(net: Network, p: Precision) -> int:
    return net.params * p.weight_bytes


def _largest_tensor(net: Network) -> int:
    return max(
        (t for layer in net.layers if layer.trainable_params for t in layer.param_tensors),
        default=0,
    )


def _state(net: Network, optimizer: str, p: Precision) -> int:
    return net.trainable_params * OPTIMIZER_STATES[optimizer] * p.state_bytes


def model_phases(
    model: ModelSpec, p: Precision, backend: Backend = "cuda", mode: str | None = None
) -> list[Phase]:
    """Every phase of one step of `model` in precision `p`."""
    mode = mode or model.mode
    if mode == "inference" or not p.training:
        if model.network is not None:
            return inference_phases(
                model.network, p, Parts(weights=_weights(model.network, p)), Parts()
            )
        assert model.generator is not None
        # a GAN at inference time is its generator
        return inference_phases(
            model.generator, p, Parts(weights=_weights(model.generator, p)), Parts()
        )
    opt = model.optimizer
    if model.network is not None:
        net = model.network
        base = Parts(weights=_weights(net, p), optimizer_state=_state(net, opt, p))
        phases = train_phases(net, p, backend, base, Parts())
        temp = optimizer_temp(opt, net.trainable_params, _largest_tensor(net), p, backend)
        in_bytes = 8 if net.integer_input else (4 if p.weight_bytes == 4 else p.act_bytes)
        phases.append(
            Phase(
                "optimizer step",
                base + Parts(gradients=net.trainable_params * p.grad_bytes, workspace=temp),
                Parts(activations=net.input_elements * in_bytes),
            )
        )
        return phases
    return _gan_phases(model, p, backend)


def _gan_phases(model: ModelSpec, p: Precision, backend: Backend) -> list[Phase]:
    """The classic alternating step: D on a real and a generated batch, then G through frozen D."""
    gen, disc = model.generator, model.discriminator
    assert gen is not None and disc is not None
    opt = model.optimizer
    base = Parts(
        weights=_weights(gen, p) + _weights(disc, p),
        optimizer_state=_state(gen, opt, p) + _state(disc, opt, p),
    )
    noise = gen.input_elements * (4 if p.weight_bytes == 4 else p.act_bytes)
    fake = disc.input_elements * p.act_bytes
    phases = inference_phases(gen, p, base, Parts(), prefix="generate fakes: ")
    # D trains on the real batch, then on the fakes (its gradients already exist then)
    phases += train_phases(
        disc,
        p,
        backend,
        base,
        Parts(activations=noise + fake),
        prefix="discriminator: ",
        grads_already_allocated=True,
    )
    disc_real_bytes = disc.input_elements * (4 if p.weight_bytes == 4 else p.act_bytes)
    phases.append(
        Phase(
            "discriminator optimizer step",
            base
            + Parts(
                gradients=disc.trainable_params * p.grad_bytes,
                workspace=optimizer_temp(
                    opt, disc.trainable_params, _largest_tensor(disc), p, backend
                ),
            ),
            Parts(activations=noise + fake + disc_real_bytes),
        )
    )
    frozen = tuple(
        replace(
            layer,
            index=layer.index,
            trainable_params=0,
            non_trainable_params=layer.params,
            saves_input_if_trainable=False,
            backward_param_transient=0,
        )
        for layer in disc.layers
    )
    combined = Network(gen.input_shape, gen.integer_input, gen.layers + frozen, ())
    # D's gradients from its own step are still allocated: loops zero them at D's next step
    base = base + Parts(gradients=disc.trainable_params * p.grad_bytes)
    phases += train_phases(
        combined, p, backend, base, Parts(), prefix="generator through frozen D: "
    )
    phases.append(
        Phase(
            "generator optimizer step",
            base
            + Parts(
                gradients=gen.trainable_params * p.grad_bytes,
                workspace=optimizer_temp(
                    opt, gen.trainable_params, _largest_tensor(gen), p, backend
                ),
            ),
            Parts(activations=noise),
        )
    )
    return phases


def peak(phases: list[Phase], batch: int) -> tuple[Phase, Parts]:
    best = max(phases, key=lambda ph: ph.at(batch).total)
    return best, best.at(batch)
