"""The training step walked on a layer graph: forward, the loss's backward, backward.

See memory.py for the rules of the walk (what lives when); this is its training
half, with PyTorch's sharing of gradient buffers and the tensors alive at a
captured moment (for the report's "alive at the peak").
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gputui.fit.core.breakdown import Parts, Phase
from gputui.fit.core.overheads import Backend
from gputui.fit.core.precision import Precision
from gputui.fit.graph.network import Network, Ref
from gputui.fit.graph.tensors import (
    LiveTensor,
    Values,
    autograd_flags,
    batch_bytes,
    saved_bytes,
    values_of,
)


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


def _plus(
    base: Parts,
    weights: float = 0,
    gradients: float = 0,
    activations: float = 0,
    workspace: float = 0,
) -> Parts:
    """`base + Parts(...)` as one object: the walk builds a few per node, every precision."""
    return Parts(
        base.weights + weights,
        base.gradients + gradients,
        base.optimizer_state,
        base.activations + activations,
        base.kv_cache,
        base.workspace + workspace,
    )


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
    retain_outputs: bool = False,
    forward_base: Parts | None = None,
) -> list[Phase]:
    """Forward and backward phases of one pass through `net` (no optimizer step).

    `retain_outputs`: every output lives until the forward returns (Keras' functional
    executor), not only until its last reader. `forward_base`: what the forward phases
    hold instead of `base` (Keras' step still holds the previous step's gradients).

    With `capture = k` (an index into the returned list) and a `live` list, the
    tensors alive at phase k are appended to `live` (for the peak report), and the walk
    stops there: the phases after k are not built.
    """
    nodes = net.nodes
    n = len(nodes)
    v = values_of(net, p)
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
    internal = [saved_bytes(nd.stats, p, backend) if active[i] else 0 for i, nd in enumerate(nodes)]
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
    # what every moment holds per sample: the caller's, plus the data batch
    held = base_per_sample + Parts(activations=batch_bytes(net, p))
    # forward liveness by difference arrays: +size when made, -size after the last reader
    delta = [0] * (n + 2)
    for o, s in v.size.items():
        m = v.made[o]
        if m < 0:
            continue  # the batch is counted apart
        delta[m] += s
        if o not in first_user:
            delta[n if retain_outputs else v.last[o] + 1] -= s
    phases: list[Phase] = []
    alive = 0
    internal_sum = 0
    copies_sum = 0
    fixed_sum = 0
    grads_size = _grad_sizes(net, p)
    total_grads = sum(grads_size.values())
    fwd = base if forward_base is None else forward_base
    for i, node in enumerate(nodes):
        alive += delta[i]
        internal_sum += internal[i]
        copies_sum += copies[i]
        fixed_sum += fixed_saved[i]
        st = node.stats
        transient = st.fixed_transient * p.weight_bytes if active[i] else 0
        if capture == len(phases) and live is not None:
            _live_forward(net, v, first_user, internal, i, live)
            return phases
        phases.append(
            Phase(
                f"{prefix}forward {node.label}",
                _plus(fwd, weights=copies_sum, activations=fixed_sum + transient),
                _plus(held, activations=alive + internal_sum + st.forward_transient * act),
            )
        )
    if not (n and any_req):
        return phases
    saved_total = sum(v.size[o] for o in first_user)
    out_grads = sum(v.grad[r] for r in dict.fromkeys(net.outputs) if req[r])
    if capture == len(phases) and live is not None:
        _live_backward(net, v, first_user, internal, n, _Grads(), live)
        return phases
    phases.append(
        Phase(
            f"{prefix}loss backward",
            _plus(
                base,
                weights=copies_sum,
                gradients=total_grads if grads_already_allocated else 0,
                activations=fixed_sum,
            ),
            _plus(held, activations=saved_total + internal_sum, workspace=out_grads),
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
            copies_now = copies_sum
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
                    return phases
                phases.append(
                    Phase(
                        f"{name}, activation",
                        _plus(base, copies_now, gradients=before, activations=fixed_live),
                        _plus(held, activations=acts, workspace=g.live + st.output_elements * act),
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
                return phases
            phases.append(
                Phase(
                    name,
                    _plus(
                        base,
                        copies_now,
                        gradients=live_grads + arriving,
                        workspace=param_transient,
                        activations=fixed_live + transient,
                    ),
                    _plus(held, activations=acts, workspace=flowing),
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
                        _plus(base, copies_now, gradients=live_grads, activations=fixed_live),
                        _plus(
                            held,
                            activations=saved_live + internal_live,
                            workspace=g.live + extra,
                        ),
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
    v: Values,
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
    v: Values,
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
