"""A TorchDispatchMode that records every storage's life and every op's work.

Used inside FakeTensorMode (trace.py): the ops run on fake tensors, so nothing is
allocated, but each output's storage is seen when made and a weakref finalizer says
when it dies, which is when the real allocator would free it. torch is imported here
only; this module is imported by trace.py when a trace runs.
"""

from __future__ import annotations

import weakref
from typing import Any

from gputui.fit.torch.misses import kernel_extra
from gputui.fit.torch.timeline import OpRecord, Timeline

_MATMUL = ("mm", "addmm", "bmm", "baddbmm", "convolution", "convolution_backward",
           "_scaled_dot_product", "linear")  # fmt: skip
_REDUCTION = ("norm", "softmax", "sum", "mean", "pool", "var", "std", "max", "min", "amax",
              "cross_entropy", "nll_loss", "logsumexp", "cumsum", "argmax")  # fmt: skip


def make_recorder(timeline: Timeline, backend: str) -> Any:
    """A dispatch mode writing into `timeline` (a class made here: torch is imported lazily)."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_flatten
    from torch.utils.flop_counter import flop_registry

    class Recorder(TorchDispatchMode):
        def __init__(self) -> None:
            super().__init__()
            self.stage = "setup"
            self.modules: list[str] = []
            self.uid_of: dict[int, int] = {}  # live storage (_cdata) -> uid
            self.size: dict[int, int] = {}
            self.next_uid = 0
            self.moment = 0

        # -- storages
        def track(self, t: Any, category: str | None = None) -> int | None:
            if not isinstance(t, torch.Tensor):
                return None
            st = t.untyped_storage()
            key = st._cdata
            uid = self.uid_of.get(key)
            if uid is None:
                uid = self.next_uid
                self.next_uid += 1
                n = int(st.nbytes())
                self.uid_of[key] = uid
                self.size[uid] = n
                timeline.stage_of[uid] = self.stage
                timeline.events.append((uid, n))
                weakref.finalize(st, self._free, key, uid)
            if category is not None:
                timeline.fixed_category[uid] = category
            return uid

        def uid(self, t: Any) -> int | None:
            if not isinstance(t, torch.Tensor):
                return None
            return self.uid_of.get(t.untyped_storage()._cdata)

        def _free(self, key: int, uid: int) -> None:
            if self.uid_of.get(key) == uid:
                del self.uid_of[key]
            timeline.events.append((uid, -self.size[uid]))

        def where(self) -> str:
            if self.stage == "backward":
                node = torch._C._current_autograd_node()
                return f"backward {node.name() if node is not None else ''}".strip()
            mod = self.modules[-1] if self.modules else ""
            return f"{self.stage} {mod}".strip()

        # -- ops
        def __torch_dispatch__(
            self, func: Any, types: Any, args: Any = (), kwargs: Any = None
        ) -> Any:
            kwargs = kwargs or {}
            out = func(*args, **kwargs)
            flat_out = [t for t in tree_flatten(out)[0] if isinstance(t, torch.Tensor)]
            if not flat_out:  # a query (device, .item(), sizes): no memory, no kernel worth timing
                return out
            for t in flat_out:
                if self.uid(t) is None:
                    self.track(t)
            label = self.where()
            timeline.labels.append(label)
            extra = kernel_extra(func, args, kwargs, out, backend)
            if extra:
                timeline.extra[self.moment] = extra
            timeline.events.append((-1, self.moment))
            self.moment += 1
            if not getattr(func, "is_view", False):
                self._op(func, args, kwargs, out, flat_out)
            return out

        def _op(self, func: Any, args: Any, kwargs: Any, out: Any, flat_out: list[Any]) -> None:
            packet = func._overloadpacket
            name = packet.__name__
            flops = 0.0
            if packet in flop_registry:
                try:
                    flops = float(flop_registry[packet](*args, **kwargs, out_val=out))
                except Exception:  # a formula that does not take these shapes: no FLOPs known
                    flops = 0.0
            tensors = [a for a in tree_flatten((args, kwargs))[0] if isinstance(a, torch.Tensor)]
            nbytes = sum(t.numel() * t.element_size() for t in tensors)
            nbytes += sum(t.numel() * t.element_size() for t in flat_out)
            if flops and any(k in name for k in _MATMUL):
                cls = "matmul"
                flops_elem = max(flops, 0.0)
            elif any(k in name for k in _REDUCTION):
                cls, flops_elem = "reduction", flops
            else:
                cls, flops_elem = "elementwise", float(flat_out[0].numel())
            if nbytes == 0 and flops_elem == 0:
                return
            dims = (
                tuple(int(d) for t in tensors[:2] for d in t.shape[-1:]) if cls == "matmul" else ()
            )
            timeline.ops.append(
                OpRecord(
                    name,
                    cls,
                    self.stage,
                    flops_elem,
                    float(nbytes),
                    self.modules[-1] if self.modules else "",
                    dims,
                )  # fmt: skip
            )

    return Recorder()
