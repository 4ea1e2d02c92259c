"""Peak memory of one training step or one inference pass, as affine functions of the batch.

A step is walked on the model's graph the way PyTorch runs it:

* forward, node by node in graph order: a tensor lives from the node that makes
  it until its last reader (so a skip connection holds its tensor across the
  branch), or, when autograd saved it, until the backward of the first node
  (in graph order) that saved it has run;
* the loss's backward: everything saved, plus a gradient for every output;
* backward, last node first: a node's output gradient and the gradients it makes
  for its inputs are alive together, with every gradient still waiting for its
  producer (a skip's gradient waits across the branch). Add, Concatenate and
  views hand their gradient on without a new buffer; a gradient arriving at a
  tensor that already has one is summed into it (in place when either buffer is
  held by nobody else, as PyTorch's InputBuffer does, else into a new buffer);
  parameter gradients appear at the first backward call of their layer (a shared
  layer's later calls add a transient parameter-sized gradient);
* the optimizer step: all gradients, the state and the optimizer's temporaries.

Each moment is a `Phase` whose bytes are `fixed + per_sample * batch`; the peak
is the largest phase at a given batch, so the largest batch that fits is solved
exactly rather than searched. The walk is linear in the number of nodes.
"""

from __future__ import annotations

from collections.abc import Callable

from gputui.fit.core.breakdown import Parts, Phase
from gputui.fit.core.overheads import Backend
from gputui.fit.core.precision import Precision
from gputui.fit.graph.eval_loss import eval_loss_phase
from gputui.fit.graph.keras_torch import keras_network
from gputui.fit.graph.keras_torch import optimizer_temp as keras_optimizer_temp
from gputui.fit.graph.network import Network, Node, compose, frozen_copy
from gputui.fit.graph.spec import OPTIMIZER_STATES, ModelSpec
from gputui.fit.graph.stats import LayerStats
from gputui.fit.graph.tensors import (
    LiveTensor,
    autograd_flags,
    input_bytes,
    optimizer_temp,
    values_of,
)
from gputui.fit.graph.train_walk import train_phases


def inference_phases(
    net: Network,
    p: Precision,
    base: Parts,
    base_per_sample: Parts,
    prefix: str = "",
    backend: Backend = "cuda",
    retain_outputs: bool = False,
) -> list[Phase]:
    """A forward pass without autograd: a tensor lives from its node to its last reader
    (to the end of the pass with `retain_outputs`, as Keras' functional executor keeps it).

    oneDNN's LSTM (CPU) reorders its weights into its own layout at every call, with
    or without autograd: without it the copy lives only while the layer runs.
    """
    v = values_of(net, p)
    n = len(net.nodes)
    delta = [0] * (n + 2)
    for o, s in v.size.items():
        m = v.made[o]
        if m >= 0:
            delta[m] += s
            delta[n + 1 if retain_outputs else v.last[o] + 1] -= s
    batch = sum(inp.elements * input_bytes(inp.integer, p) for inp in net.inputs)
    phases = []
    alive = 0
    for i, node in enumerate(net.nodes):
        alive += delta[i]
        st = node.stats
        copies = st.matmul_params * p.low_copy_bytes
        if backend == "cpu":
            copies += st.fixed_saved_cpu * p.weight_bytes
        transient = (
            st.forward_transient if st.inference_transient is None else st.inference_transient
        )
        index = st.inference_index * 8  # int64, freed when the layer returns
        phases.append(
            Phase(
                f"{prefix}forward {node.label}",
                base + Parts(weights=copies, activations=st.fixed_transient * p.weight_bytes),
                base_per_sample
                + Parts(activations=batch + alive + transient * p.act_bytes + index),
            )
        )
    return phases


def layers_of(net: Network) -> tuple[LayerStats, ...]:
    return net.layers


def _weights(net: Network, p: Precision) -> int:
    return net.params * p.weight_bytes


def _largest_tensor(net: Network) -> int:
    return max(
        (t for nd in net.nodes if nd.stats.trainable_params for t in nd.stats.param_tensors),
        default=0,
    )


def _state(net: Network, optimizer: str, p: Precision) -> int:
    return net.trainable_params * OPTIMIZER_STATES[optimizer] * p.state_bytes


def model_phases(
    model: ModelSpec,
    p: Precision,
    backend: Backend = "cuda",
    mode: str | None = None,
    *,
    capture: int | None = None,
    live: list[LiveTensor] | None = None,
) -> list[Phase]:
    """Every phase of one step of `model` in precision `p`."""
    mode = mode or model.mode
    keras = model.runtime == "keras-torch"
    if mode in ("inference", "eval") or not p.training:
        net = model.network if model.network is not None else model.generator
        assert net is not None
        net = keras_network(net, training=False) if keras else net
        # a GAN at inference time is its generator
        phases = inference_phases(
            net, p, Parts(weights=_weights(net, p)), Parts(), backend=backend, retain_outputs=keras
        )
        return phases + ([eval_loss_phase(net, p)] if mode == "eval" else [])
    opt = model.optimizer
    if model.network is not None:
        net = keras_network(model.network, training=True) if keras else model.network
        base = Parts(weights=_weights(net, p), optimizer_state=_state(net, opt, p))
        # Keras' step zeroes the previous step's gradients only after its forward
        forward = base + Parts(gradients=net.trainable_params * p.grad_bytes) if keras else None
        phases = train_phases(
            net,
            p,
            backend,
            base,
            Parts(),
            capture=capture,
            live=live,
            retain_outputs=keras,
            forward_base=forward,
        )
        in_bytes = sum(i.elements * input_bytes(i.integer, p) for i in net.inputs)
        phases.append(_step("optimizer step", net, opt, p, backend, base, in_bytes, keras))
        return phases
    return _gan_phases(model, p, backend)


def _gan_phases(model: ModelSpec, p: Precision, backend: Backend) -> list[Phase]:
    """The classic alternating step: D on a real and a generated batch, then G through frozen D.

    Under keras-torch the same step with Keras' layers, executor and optimizers (a
    Keras GAN's own `train_step` orders its steps likewise)."""
    keras = model.runtime == "keras-torch"
    gen, disc = model.generator, model.discriminator
    assert gen is not None and disc is not None
    if keras:
        gen, disc = keras_network(gen, training=True), keras_network(disc, training=True)
    opt = model.optimizer
    base = Parts(
        weights=_weights(gen, p) + _weights(disc, p),
        optimizer_state=_state(gen, opt, p) + _state(disc, opt, p),
    )
    noise = sum(i.elements * input_bytes(i.integer, p) for i in gen.inputs)
    fake = disc.input_elements * p.act_bytes
    phases = inference_phases(
        keras_network(model.generator, training=False) if keras and model.generator else gen,
        p,
        base,
        Parts(),
        prefix="generate fakes: ",
        backend=backend,
        retain_outputs=keras,
    )
    # D trains on the real batch, then on the fakes (its gradients already exist then)
    phases += train_phases(
        disc,
        p,
        backend,
        base,
        Parts(activations=noise + fake),
        prefix="discriminator: ",
        grads_already_allocated=True,
        retain_outputs=keras,
    )
    disc_real_bytes = disc.input_elements * input_bytes(False, p)
    batch = noise + fake + disc_real_bytes
    phases.append(_step("discriminator optimizer step", disc, opt, p, backend, base, batch, keras))
    combined = compose(gen, frozen_copy(disc), prefix="discriminator/")
    # D's gradients from its own step are still allocated: loops zero them at D's next step
    base = base + Parts(gradients=disc.trainable_params * p.grad_bytes)
    phases += train_phases(
        combined,
        p,
        backend,
        base,
        Parts(),
        prefix="generator through frozen D: ",
        retain_outputs=keras,
    )
    phases.append(_step("generator optimizer step", gen, opt, p, backend, base, noise, keras))
    return phases


def _step(
    name: str,
    net: Network,
    optimizer: str,
    p: Precision,
    backend: Backend,
    base: Parts,
    held_per_sample: int,
    keras: bool = False,
) -> Phase:
    """`net`'s optimizer step: its gradients and the optimizer's temporaries on top of
    `base`, with the data batch (`held_per_sample` bytes per sample) still held."""
    if keras:
        temp = keras_optimizer_temp(optimizer, net.trainable_params, p)
    else:
        temp = optimizer_temp(optimizer, net.trainable_params, _largest_tensor(net), p, backend)
    return Phase(
        name,
        base + Parts(gradients=net.trainable_params * p.grad_bytes, workspace=temp),
        Parts(activations=held_per_sample),
    )


def live_at_peak(
    model: ModelSpec,
    p: Precision,
    backend: Backend,
    batch: int,
    phases_of: Callable[[ModelSpec, Precision, Backend], list[Phase]] | None = None,
) -> tuple[Phase, list[LiveTensor]]:
    """The peak phase and the activation tensors alive then, by the layer that made them.

    For GANs and inference passes only the phase is known (the list stays empty).
    """
    phases = (phases_of or model_phases)(model, p, backend)
    best = max(range(len(phases)), key=lambda k: phases[k].at(batch).total)
    live: list[LiveTensor] = []
    if model.network is not None and model.mode == "train" and p.training:
        model_phases(model, p, backend, capture=best, live=live)
    return phases[best], live


def _node_names(net: Network) -> list[str]:
    return [nd.name for nd in net.nodes]


__all__ = [
    "Backend",
    "LiveTensor",
    "Node",
    "Parts",
    "Phase",
    "autograd_flags",
    "inference_phases",
    "input_bytes",
    "live_at_peak",
    "model_phases",
    "optimizer_temp",
    "train_phases",
]
