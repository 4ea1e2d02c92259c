"""What each transformers activation (`ACT2FN[name]`) keeps for its backward pass.

An activation written in Python is several autograd nodes, and each node saves its
own inputs: GPT-2's `gelu_new`, `0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 *
pow(x, 3))))`, keeps x (pow), the tanh output (tanh), 0.5*x and 1+tanh (the last
multiply): four tensors of the MLP width where PyTorch's fused `F.gelu` keeps one.
The counts below follow each implementation in transformers 5.24's activations.py
(and BLOOM's `BloomGelu`, whose training path is a custom autograd function saving
its input), node by node; benchmarks/hf_train_memory.py --saved measures them with
torch.autograd.graph.saved_tensors_hooks.

`saved` counts the tensors of the activation's width that its nodes save, its own
output left out; `keeps_output` says whether a node saves the output too (ReLU,
tanh, sigmoid: the same tensor the next linear keeps as its input, so it is kept even
when that linear is frozen).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ActSaved", "act_saved", "known_activation"]


@dataclass(frozen=True, slots=True)
class ActSaved:
    saved: int  # tensors of the activation's width kept for backward, its output aside
    keeps_output: bool = False  # the output itself is saved by the activation


# name -> what its implementation's autograd nodes save (see the module docstring)
_TABLE: dict[str, ActSaved] = {
    "gelu": ActSaved(1),  # F.gelu: its input
    "gelu_pytorch_tanh": ActSaved(1),  # F.gelu(approximate="tanh"): its input
    "gelu_bloom": ActSaved(1),  # BloomGelu's GeLUFunction: its input
    # 0.5*x*(1+tanh(c*(x+0.044715*x^3))): x (pow), tanh, 0.5*x, 1+tanh
    "gelu_new": ActSaved(4),
    "gelu_python_tanh": ActSaved(4),  # the same formula as x*0.5*(...)
    "gelu_accurate": ActSaved(4),  # the same formula with a precomputed constant
    # 0.5*x*(1+tanh(x*c*(1+0.044715*x*x))): 0.044715*x and x (x*x), x*c and 1+..., tanh,
    # 0.5*x and 1+tanh
    "gelu_fast": ActSaved(7),
    "gelu_python": ActSaved(3),  # x*0.5*(1+erf(x/sqrt2)): x/sqrt2 (erf), x*0.5, 1+erf
    "gelu_10": ActSaved(2),  # clip(F.gelu(x)): x (gelu) and gelu's output (clip)
    "quick_gelu": ActSaved(2),  # x*sigmoid(1.702x): x and the sigmoid output
    "silu": ActSaved(1),
    "swish": ActSaved(1),
    "mish": ActSaved(1),
    "hardswish": ActSaved(1),
    "leaky_relu": ActSaved(1),
    "relu6": ActSaved(1),  # hardtanh: its input
    "prelu": ActSaved(1),
    "laplace": ActSaved(1),
    "relu2": ActSaved(1),  # square(relu(x)): relu's output (kept by relu and square)
    "sqrtsoftplus": ActSaved(1, True),
    "relu": ActSaved(0, True),
    "tanh": ActSaved(0, True),
    "sigmoid": ActSaved(0, True),
    "linear": ActSaved(0),
}

_UNKNOWN = ActSaved(1)  # counted as a fused function of its input; the estimate says so


def known_activation(name: str) -> bool:
    return name in _TABLE


def act_saved(name: str) -> ActSaved:
    return _TABLE.get(name, _UNKNOWN)
