"""What fake tensors cannot see: memory a real kernel takes beyond its outputs.

A fake tensor has a shape and no kernel, so a kernel's own scratch space never shows
in a trace. Each mechanism here is a rule per op and backend, worked from what the
kernel does, added to the moment the op runs (fit/torch/timeline.py `extra`):

* CPU LSTM (aten::mkldnn_rnn_layer, oneDNN): every call reorders its two weight
  matrices into oneDNN's layout (two weight-sized copies, freed when the call returns)
  and computes the four gates of every step into a scratch buffer of steps x batch x
  4 x hidden elements; fake tensors return an empty workspace.
"""

from __future__ import annotations

from typing import Any


def kernel_extra(func: Any, args: Any, kwargs: Any, out: Any, backend: str) -> int:
    """Bytes the real kernel of `func` holds while it runs, beyond its inputs and outputs."""
    if backend != "cpu":
        return 0
    name = func._overloadpacket.__name__
    if name == "mkldnn_rnn_layer":
        return _onednn_lstm(args)
    return 0


def _nbytes(t: Any) -> int:
    return int(t.numel() * t.element_size())


def _onednn_lstm(args: Any) -> int:
    x, w_ih, w_hh = args[0], args[1], args[2]
    rows = int(x.numel()) // max(int(x.shape[-1]), 1)  # steps x batch
    gates = int(w_ih.shape[0])  # 4 x hidden
    return _nbytes(w_ih) + _nbytes(w_hh) + rows * gates * int(x.element_size())
