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
from dataclasses import dataclass, field
from typing import Literal

from gputui.fit.core.precision import Precision
from gputui.fit.core.sums import ItemSums
from gputui.fit.graph.eval_loss import loss_bytes_per_sample
from gputui.fit.graph.network import Network, Node, Ref, compose, frozen_copy
from gputui.fit.graph.stats import LayerStats
from gputui.fit.modelsfile import OPTIMIZER_STATES, ModelSpec

Backend = Literal["cuda", "cpu"]
ITEMS = ("weights", "gradients", "optimizer_state", "activations", "workspace")


@dataclass(frozen=True, slots=True)
class Parts(ItemSums[int]):
    """Bytes by item (ITEMS, in order); `+`, `scaled` and `total` item by item (fit/core/sums.py)."""

    weights: int = 0
    gradients: int = 0
    optimizer_state: int = 0
    activations: int = 0
    workspace: int = 0


@dataclass(frozen=True, slots=True)
class Phase:
    """One moment of the step: bytes = fixed + per_sample * batch."""

    name: str
    fixed: Parts
    per_sample: Parts

    def at(self, batch: int) -> Parts:
        return self.fixed + self.per_sample.scaled(batch)


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
class _Values:
    """Storage of every value of a graph: which tensor owns it and its bytes per sample."""

    owner: dict[Ref, Ref]
    size: dict[Ref, int]  # owner -> bytes per sample
    grad: dict[Ref, int]  # value -> bytes per sample of its gradient
    made: dict[Ref, int]  # owner -> position of the node that made it (-1: model input)
    last: dict[Ref, int]  # owner -> position of its last reader in the forward pass


def _values(net: Network, p: Precision) -> _Values:
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
            per_el[out] = _out_bytes(st, p)
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
    return _Values(owner, size, grad, made, last)


@dataclass(slots=True)
class _Grads:
    """Gradient buffers of activations with PyTorch's sharing: views and Add pass one on."""

    size: dict[int, int] = field(default_factory=dict)
    refs: dict[int, int] = field(default_factory=dict)
    of: dict[Ref, int] = field(default_factory=dict)  # value -> buffer
    live: int = 0
    next_id: int = 0

    def new(self, nbytes: int) -> int:
        b = self.next_id
        self.next_id += 1
        self.size[b] = nbytes
        self.refs[b] = 0
        self.live += nbytes
        return b

    def hold(self, b: int) -> None:
        self.refs[b] += 1

    def drop(self, b: int) -> None:
        self.refs[b] -= 1
        if self.refs[b] == 0:
            self.live -= self.size.pop(b)
            del self.refs[b]

    def arrive(self, value: Ref, b: int, nbytes: int) -> int:
        """Gradient buffer `b` reaches `value`; the bytes of a sum buffer if one was needed."""
        self.hold(b)
        old = self.of.get(value)
        if old is None:
            self.of[value] = b
            return 0
        extra = 0
        if self.refs[old] == 1:
            keep, other = old, b
        elif self.refs[b] == 1:
            keep, other = b, old
        else:
            keep, other = self.new(nbytes), old
            self.hold(keep)
            extra = nbytes
            self.drop(b)
        self.of[value] = keep
        self.drop(other)
        return extra


def _grad_sizes(net: Network, p: Precision) -> dict[str, int]:
    """Bytes of each weight set's gradient, by the node that owns the weights."""
    out: dict[str, int] = {}
    for node in net.nodes:
        if node.weights == node.name and node.stats.trainable_params:
            out[node.name] = node.stats.trainable_params * p.grad_bytes
    return out


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


def train_phases(
    net: Network,
    p: Precision,
    backend: Backend,
    base: Parts,
    base_per_sample: Parts,
    *,
    prefix: str = "",
    grads_already_allocated: bool = False,
    capture: int | None = None,
    live: list[LiveTensor] | None = None,
) -> list[Phase]:
    """Forward and backward phases of one pass through `net` (no optimizer step).

    With `capture = k` (an index into the returned list) and a `live` list, the
    tensors alive at phase k are appended to `live` (for the peak report).
    """
    nodes = net.nodes
    n = len(nodes)
    v = _values(net, p)
    owner = v.owner
    req, active, in_req = autograd_flags(net)
    any_req = any(req[r] for r in net.outputs)
    first_user: dict[Ref, int] = {}  # owner -> lowest node position that saved it

    def save(o: Ref, user: int) -> None:
        if o[0] >= 0 and first_user.get(o, user + 1) > user:
            first_user[o] = user

    for i, node in enumerate(nodes):
        if not active[i]:
            continue
        st = node.stats
        if st.saves_input or (st.saves_input_if_trainable and node.trains):
            for s in st.saved_slots if st.saved_slots is not None else range(len(node.inputs)):
                if s < len(node.inputs):
                    save(owner[node.inputs[s]], i)
        if st.saves_output:
            save(owner[(i, 0)], i)
    if any_req:
        for r in net.outputs:
            if req[r]:
                save(owner[r], n)  # the loss keeps the model's output
    act = p.act_bytes
    internal = [
        _saved_bytes(nd.stats, p, backend) if active[i] else 0 for i, nd in enumerate(nodes)
    ]
    copies = [
        nd.stats.matmul_params * p.low_copy_bytes if active[i] else 0 for i, nd in enumerate(nodes)
    ]
    cpu = backend == "cpu"
    fixed_saved = [
        (nd.stats.fixed_saved + (nd.stats.fixed_saved_cpu if cpu else 0)) * p.weight_bytes
        if active[i]
        else 0
        for i, nd in enumerate(nodes)
    ]
    batch = Parts(activations=batch_bytes(net, p))
    # forward liveness by difference arrays: +size when made, -size after the last reader
    delta = [0] * (n + 2)
    for o, s in v.size.items():
        m = v.made[o]
        if m < 0:
            continue  # the batch is counted apart
        delta[m] += s
        if o not in first_user:
            delta[v.last[o] + 1] -= s
    phases: list[Phase] = []
    alive = 0
    internal_sum = 0
    copies_sum = 0
    fixed_sum = 0
    grads_size = _grad_sizes(net, p)
    total_grads = sum(grads_size.values())
    for i, node in enumerate(nodes):
        alive += delta[i]
        internal_sum += internal[i]
        copies_sum += copies[i]
        fixed_sum += fixed_saved[i]
        st = node.stats
        transient = st.fixed_transient * p.weight_bytes if active[i] else 0
        if capture == len(phases) and live is not None:
            _live_forward(net, v, first_user, internal, i, live)
        phases.append(
            Phase(
                f"{prefix}forward {node.label}",
                base + Parts(weights=copies_sum, activations=fixed_sum + transient),
                base_per_sample
                + batch
                + Parts(activations=alive + internal_sum + st.forward_transient * act),
            )
        )
    if not (n and any_req):
        return phases
    saved_total = sum(v.size[o] for o in first_user)
    out_grads = sum(v.grad[r] for r in dict.fromkeys(net.outputs) if req[r])
    if capture == len(phases) and live is not None:
        _live_backward(net, v, first_user, internal, n, _Grads(), live)
    phases.append(
        Phase(
            f"{prefix}loss backward",
            base
            + Parts(
                weights=copies_sum,
                gradients=total_grads if grads_already_allocated else 0,
                activations=fixed_sum,
            ),
            base_per_sample
            + batch
            + Parts(activations=saved_total + internal_sum, workspace=out_grads),
        )
    )
    freed_at: dict[int, list[Ref]] = {}
    for o, user in first_user.items():
        freed_at.setdefault(user, []).append(o)
    g = _Grads()
    for r in dict.fromkeys(net.outputs):
        if req[r]:
            g.arrive(r, g.new(v.grad[r]), v.grad[r])
    saved_live = saved_total - sum(v.size[o] for o in freed_at.get(n, ()))  # the loss's
    internal_live = internal_sum
    fixed_live = fixed_sum
    allocated: set[str] = set()
    live_grads = total_grads if grads_already_allocated else 0
    for i in range(n - 1, -1, -1):
        node = nodes[i]
        st = node.stats
        outs = [(i, k) for k in range(1 + len(st.extra_outputs))]
        has_grad = [r for r in outs if r in g.of]
        if active[i] and has_grad:
            weights = base + Parts(weights=copies_sum)
            copies_sum -= copies[i]
            before = live_grads
            param_transient = st.backward_param_transient * p.grad_bytes
            arriving = 0  # a parameter gradient made here before it is summed into .grad
            if node.trains:
                wsize = node.weight_trainable * p.grad_bytes
                if grads_already_allocated or node.weights in allocated:
                    arriving = wsize
                else:
                    allocated.add(node.weights)
                    live_grads += grads_size.get(node.weights, wsize)
            alias = st.grad_alias or st.output_is_view
            new_bytes = 0
            if not alias:
                new_bytes = sum(v.grad[r] for s, r in enumerate(node.inputs) if in_req[i][s])
            transient = st.fixed_transient * p.weight_bytes
            name = f"{prefix}backward {node.label}"
            acts = saved_live + internal_live
            if st.fused_activation != "none":
                if capture == len(phases) and live is not None:
                    _live_backward(net, v, first_user, internal, i, g, live)
                phases.append(
                    Phase(
                        f"{name}, activation",
                        weights + Parts(gradients=before, activations=fixed_live),
                        base_per_sample
                        + batch
                        + Parts(activations=acts, workspace=g.live + st.output_elements * act),
                    )
                )
                inputs_owned = {owner[r] for r in node.inputs}
                acts -= sum(v.size[o] for o in freed_at.get(i, ()) if o not in inputs_owned)
                if st.fused_activation == "input":
                    acts -= st.output_elements * act
            flowing = g.live + new_bytes + st.backward_transient * act
            if st.backward_steps:
                # the worst of the layer's own backward steps (the stat kinds of its saved
                # tensors count as activation elements here: a slight over-estimate)
                worst = max(
                    (
                        (
                            acts - internal[i] + kept * act,
                            g.live + alive * act + (new_bytes if ins else 0),
                        )
                        for kept, alive, ins in st.backward_steps
                    ),
                    key=lambda pair: pair[0] + pair[1],
                )
                acts, flowing = worst
            if capture == len(phases) and live is not None:
                _live_backward(net, v, first_user, internal, i, g, live)
            phases.append(
                Phase(
                    name,
                    weights
                    + Parts(
                        gradients=live_grads + arriving,
                        workspace=param_transient,
                        activations=fixed_live + transient,
                    ),
                    base_per_sample + batch + Parts(activations=acts, workspace=flowing),
                )
            )
            # hand gradients to the inputs, then let go of the outputs' gradients
            out_buf = g.of.get((i, 0))
            extra = 0
            for s, r in enumerate(node.inputs):
                if not in_req[i][s]:
                    continue
                if alias and out_buf is not None:
                    extra = max(extra, g.arrive(r, out_buf, v.grad[r]))
                else:
                    extra = max(extra, g.arrive(r, g.new(v.grad[r]), v.grad[r]))
            for r in has_grad:
                g.drop(g.of.pop(r))
            if extra:
                phases.append(
                    Phase(
                        f"{name}, gradient sum",
                        weights + Parts(gradients=live_grads, activations=fixed_live),
                        base_per_sample
                        + batch
                        + Parts(activations=saved_live + internal_live, workspace=g.live + extra),
                    )
                )
        else:
            copies_sum -= copies[i]
            for r in has_grad:
                g.drop(g.of.pop(r))
        saved_live -= sum(v.size[o] for o in freed_at.get(i, ()))
        internal_live -= internal[i]
        fixed_live -= fixed_saved[i]
    return phases


def _live_forward(
    net: Network,
    v: _Values,
    first_user: dict[Ref, int],
    internal: list[int],
    i: int,
    out: list[LiveTensor],
) -> None:
    names = net.nodes
    for o, s in v.size.items():
        m = v.made[o]
        if m < 0 or m > i:
            continue
        if o in first_user:
            user = first_user[o]
            what = "output, kept for backward" if user <= i else "output, kept for backward later"
            if user == len(names):
                what = "model output, kept by the loss"
            out.append(LiveTensor(names[m].name, what, s))
        elif v.last[o] >= i:
            out.append(LiveTensor(names[m].name, "output", s))
    for j in range(i + 1):
        if internal[j]:
            out.append(LiveTensor(names[j].name, "kept inside for backward", internal[j]))


def _live_backward(
    net: Network,
    v: _Values,
    first_user: dict[Ref, int],
    internal: list[int],
    i: int,
    g: _Grads,
    out: list[LiveTensor],
) -> None:
    names = net.nodes
    for o, user in first_user.items():
        if user <= i:
            out.append(LiveTensor(names[o[0]].name, "output, kept for backward", v.size[o]))
    for j in range(min(i + 1, len(internal))):
        if internal[j]:
            out.append(LiveTensor(names[j].name, "kept inside for backward", internal[j]))
    seen: set[int] = set()
    for ref, b in g.of.items():
        if b in seen or ref[0] < 0:
            continue
        seen.add(b)
        out.append(LiveTensor(names[ref[0]].name, "gradient of its output", g.size.get(b, 0)))


def inference_phases(
    net: Network, p: Precision, base: Parts, base_per_sample: Parts, prefix: str = ""
) -> list[Phase]:
    """A forward pass without autograd: a tensor lives from its node to its last reader."""
    v = _values(net, p)
    n = len(net.nodes)
    delta = [0] * (n + 2)
    for o, s in v.size.items():
        m = v.made[o]
        if m >= 0:
            delta[m] += s
            delta[v.last[o] + 1] -= s
    batch = sum(inp.elements * input_bytes(inp.integer, p) for inp in net.inputs)
    phases = []
    alive = 0
    for i, node in enumerate(net.nodes):
        alive += delta[i]
        st = node.stats
        copies = st.matmul_params * p.low_copy_bytes
        transient = (
            st.forward_transient if st.inference_transient is None else st.inference_transient
        )
        phases.append(
            Phase(
                f"{prefix}forward {node.label}",
                base + Parts(weights=copies, activations=st.fixed_transient * p.weight_bytes),
                base_per_sample + Parts(activations=batch + alive + transient * p.act_bytes),
            )
        )
    return phases


def _eval_loss(net: Network, p: Precision) -> Phase:
    """The loss after the forward: the batch, the outputs (all else is freed) and its temporaries."""
    v = _values(net, p)
    held = sum(v.size[o] for o in {v.owner[r] for r in net.outputs} if o[0] >= 0)
    batch = sum(inp.elements * input_bytes(inp.integer, p) for inp in net.inputs)
    per = batch + held + loss_bytes_per_sample(net, p)
    return Phase("loss (eval)", Parts(weights=_weights(net, p)), Parts(activations=per))


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
    if mode in ("inference", "eval") or not p.training:
        net = model.network if model.network is not None else model.generator
        assert net is not None
        # a GAN at inference time is its generator
        phases = inference_phases(net, p, Parts(weights=_weights(net, p)), Parts())
        return phases + ([_eval_loss(net, p)] if mode == "eval" else [])
    opt = model.optimizer
    if model.network is not None:
        net = model.network
        base = Parts(weights=_weights(net, p), optimizer_state=_state(net, opt, p))
        phases = train_phases(net, p, backend, base, Parts(), capture=capture, live=live)
        in_bytes = sum(i.elements * input_bytes(i.integer, p) for i in net.inputs)
        phases.append(_step("optimizer step", net, opt, p, backend, base, in_bytes))
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
    noise = sum(i.elements * input_bytes(i.integer, p) for i in gen.inputs)
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
    disc_real_bytes = disc.input_elements * input_bytes(False, p)
    batch = noise + fake + disc_real_bytes
    phases.append(_step("discriminator optimizer step", disc, opt, p, backend, base, batch))
    combined = compose(gen, frozen_copy(disc), prefix="discriminator/")
    # D's gradients from its own step are still allocated: loops zero them at D's next step
    base = base + Parts(gradients=disc.trainable_params * p.grad_bytes)
    phases += train_phases(
        combined, p, backend, base, Parts(), prefix="generator through frozen D: "
    )
    phases.append(_step("generator optimizer step", gen, opt, p, backend, base, noise))
    return phases


def _step(
    name: str,
    net: Network,
    optimizer: str,
    p: Precision,
    backend: Backend,
    base: Parts,
    held_per_sample: int,
) -> Phase:
    """`net`'s optimizer step: its gradients and the optimizer's temporaries on top of
    `base`, with the data batch (`held_per_sample` bytes per sample) still held."""
    temp = optimizer_temp(optimizer, net.trainable_params, _largest_tensor(net), p, backend)
    return Phase(
        name,
        base + Parts(gradients=net.trainable_params * p.grad_bytes, workspace=temp),
        Parts(activations=held_per_sample),
    )


def peak(phases: list[Phase], batch: int) -> tuple[Phase, Parts]:
    best = max(phases, key=lambda ph: ph.at(batch).total)
    return best, best.at(batch)


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
    "inference_phases",
    "live_at_peak",
    "model_phases",
    "optimizer_temp",
    "peak",
    "train_phases",
]
