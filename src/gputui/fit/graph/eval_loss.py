"""The loss of an eval pass (a no-grad forward with labels) on a graph model.

A forward without labels (inference) ends when the last layer has run: only the
model's outputs are alive then. With labels the loss runs on top of them under
torch.no_grad: each output is upcast to fp32 (`out.float()`, a copy unless it
already is fp32) and the loss's elementwise step (cross-entropy's log-softmax, a
squared error's square) writes one more fp32 tensor of the output's shape before
the reduction; the outputs' losses are computed one after another, so the
largest one sets the moment, with every output still held.
"""

from __future__ import annotations

from gputui.fit.core.breakdown import Parts, Phase
from gputui.fit.core.precision import Precision
from gputui.fit.graph.network import Network
from gputui.fit.graph.tensors import input_bytes, values_of


def _elements(net: Network, ref: tuple[int, int]) -> int:
    st = net.nodes[ref[0]].stats
    if ref[1] == 0:
        return st.output_elements
    n = 1
    for d in st.extra_outputs[ref[1] - 1]:
        n *= d
    return n


def _out_bytes(net: Network, ref: tuple[int, int], p: Precision) -> int:
    st = net.nodes[ref[0]].stats
    if ref[1] == 0 and p.amp and st.autocast_fp32:
        return 4
    return p.act_bytes


def loss_bytes_per_sample(net: Network, p: Precision) -> int:
    """Bytes per sample the loss adds to the held outputs at its largest moment."""
    worst = 0
    for ref in dict.fromkeys(net.outputs):
        if ref[0] < 0:
            continue  # an input passed through: still a tensor the loss reads, same rule
        el = _elements(net, ref)
        upcast = 4 * el if _out_bytes(net, ref, p) < 4 else 0
        worst = max(worst, upcast + 4 * el)
    return worst


def eval_loss_phase(net: Network, p: Precision) -> Phase:
    """The loss after the forward: the batch, the outputs (all else is freed) and its temporaries."""
    v = values_of(net, p)
    held = sum(v.size[o] for o in {v.owner[r] for r in net.outputs} if o[0] >= 0)
    batch = sum(inp.elements * input_bytes(inp.integer, p) for inp in net.inputs)
    per = batch + held + loss_bytes_per_sample(net, p)
    return Phase("loss (eval)", Parts(weights=net.params * p.weight_bytes), Parts(activations=per))
