"""One step of the user's model under FakeTensorMode, recorded (record.py).

Training is measured on the second step, when the optimizer state exists: each step
is zero_grad (gradients set to None), forward, loss, backward, optimizer step, the
loop PyTorch's examples write. Inference is one forward under no_grad; eval adds the
loss. Precisions are traced as PyTorch runs them: fp32 as is, amp_* under autocast
(bf16, whose bytes are fp16's), pure 16-bit with the model and float inputs cast.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from typing import Any

from gputui.core.errors import UserError
from gputui.fit.torch.load import call
from gputui.fit.torch.spec import InputShape, TorchSpec
from gputui.fit.torch.timeline import Timeline

# what each precision is traced as (fp32/tf32 and the two amps have the same bytes)
TRACE_AS = {"fp32": "fp32", "tf32": "fp32", "amp_fp16": "amp", "amp_bf16": "amp",
            "bf16": "half", "fp16": "half"}  # fmt: skip


@dataclass(frozen=True, slots=True)
class UserCode:
    """The user's callables, resolved (load.resolve), with the files they came from."""

    factory: tuple[Callable[..., Any], str]
    inputs: tuple[Callable[..., Any], str] | None
    loss: tuple[Callable[..., Any], str] | None


@dataclass(frozen=True, slots=True)
class Facts:
    params: int
    trainable_params: int
    loss_from: str  # "--loss", ".loss" or "sum of the outputs"
    convolutions: bool
    modules: int


def trace_step(
    spec: TorchSpec, code: UserCode, batch: int, kind: str, backend: str
) -> tuple[Timeline, Facts]:
    """Run one measured step of `spec` at `batch`, traced as `kind` (TRACE_AS's values)."""
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode

    from gputui.fit.torch.record import make_recorder

    timeline = Timeline()
    half = torch.bfloat16
    with FakeTensorMode(allow_non_fake_inputs=True):
        model = call(*code.factory, "--torch")
        if not isinstance(model, torch.nn.Module):
            raise UserError(f"--torch: {code.factory[1]}: the factory returned "
                            f"{type(model).__name__}, not a torch.nn.Module")  # fmt: skip
        if kind == "half":
            model = _to_half(model, half)
        train = spec.mode == "train"
        model.train(train)
        x = _inputs(spec, code, batch, half if kind == "half" else None)
        trainable = [p for p in model.parameters() if p.requires_grad]
        params = sum(p.numel() for p in model.parameters())
        opt = _optimizer(spec.optimizer, trainable, backend) if train and trainable else None
        rec = make_recorder(timeline, backend)
        names = {id(m): n or type(m).__name__ for n, m in model.named_modules()}
        convs = any(isinstance(m, torch.nn.modules.conv._ConvNd) for m in model.modules())
        loss_from = ["sum of the outputs"]
        autocast = torch.autocast("cpu", dtype=half) if kind == "amp" else nullcontext()
        if opt is not None:
            _first_step(opt, trainable)
        with rec, _module_hooks(rec, names):
            _register(rec, model, x, opt)
            timeline.first_moment = rec.moment
            if opt is not None:
                opt.zero_grad(set_to_none=True)
            rec.stage = "forward"
            loss = None
            with torch.enable_grad() if train else torch.no_grad(), autocast:
                out = _forward(model, x, code)
                if train or spec.mode == "eval":
                    rec.stage = "loss"
                    loss = _loss(out, batch, code, loss_from)
            del out
            if train:
                assert loss is not None
                rec.stage = "backward"
                call(loss.backward, code.factory[1], "--torch")
                del loss
                if opt is not None:
                    rec.stage = "optimizer"
                    opt.step()
                    for p in trainable:
                        if p.grad is not None:
                            rec.track(p.grad, "gradients")
            loss = None
            rec.stage = "after"
    facts = Facts(params, sum(p.numel() for p in trainable), loss_from[0], convs,
                  len(names))  # fmt: skip
    return timeline, facts


def _to_half(model: Any, dtype: Any) -> Any:
    """model.to(dtype) for floating parameters and buffers, as new tensors: nn.Module.to
    swaps tensors in place, which fake tensors refuse."""
    import torch

    for m in model.modules():
        for name, p in list(m._parameters.items()):
            if p is not None and p.is_floating_point():
                m._parameters[name] = torch.nn.Parameter(
                    p.detach().to(dtype), requires_grad=p.requires_grad
                )
        for name, b in list(m._buffers.items()):
            if b is not None and b.is_floating_point():
                m._buffers[name] = b.to(dtype)
    return model


def _first_step(opt: Any, trainable: list[Any]) -> None:
    """The optimizer's first step, so its state exists when the measured step runs.

    Gradients of zeros stand in for a first forward and backward: only the state's
    shapes matter, and a whole first step would double the trace's time."""
    import torch

    for p in trainable:
        p.grad = torch.zeros_like(p)
    opt.step()


def _register(rec: Any, model: Any, x: Any, opt: Any) -> None:
    """What is alive before the measured step, by what it is."""
    import torch

    for p in model.parameters():
        rec.track(p, "parameters")
        if p.grad is not None:
            rec.track(p.grad, "gradients")
    for b in model.buffers():
        rec.track(b, "parameters")
    for t in _tensors(x):
        rec.track(t, "activations")
    if opt is not None:
        for state in opt.state.values():
            for v in state.values():
                if isinstance(v, torch.Tensor):
                    rec.track(v, "optimizer_state")


def _inputs(spec: TorchSpec, code: UserCode, batch: int, half: Any) -> Any:
    import torch

    if code.inputs is not None:
        x = call(*code.inputs, "--inputs", batch)
    else:
        made = []
        for s in spec.input_shapes:
            dtype = getattr(torch, s.dtype)
            if dtype.is_floating_point:
                made.append(torch.randn((batch, *s.shape), dtype=dtype))
            else:
                made.append(torch.zeros((batch, *s.shape), dtype=dtype))
        x = made[0] if len(made) == 1 else tuple(made)
    if half is not None:
        x = _cast(x, half)
    return x


def _cast(x: Any, dtype: Any) -> Any:
    import torch

    if isinstance(x, torch.Tensor):
        return x.to(dtype) if x.is_floating_point() else x
    if isinstance(x, tuple | list):
        return type(x)(_cast(v, dtype) for v in x)
    if isinstance(x, dict):
        return {k: _cast(v, dtype) for k, v in x.items()}
    return x


def _tensors(x: Any) -> Iterator[Any]:
    import torch
    from torch.utils._pytree import tree_flatten

    for v in tree_flatten(x)[0]:
        if isinstance(v, torch.Tensor):
            yield v


def _forward(model: Any, x: Any, code: UserCode) -> Any:
    origin = code.factory[1]
    if isinstance(x, dict):
        return call(lambda: model(**x), origin, "--torch")
    if isinstance(x, tuple | list):
        return call(lambda: model(*x), origin, "--torch")
    return call(lambda: model(x), origin, "--torch")


def _loss(out: Any, batch: int, code: UserCode, said: list[str]) -> Any:
    import torch

    if code.loss is not None:
        said[0] = "--loss"
        loss = call(*code.loss, "--loss", out, batch)
    elif getattr(out, "loss", None) is not None:
        said[0] = ".loss"
        loss = out.loss
    else:
        said[0] = "sum of the outputs"
        parts = [t.float().sum() for t in _tensors(out) if t.is_floating_point()]
        if not parts:
            raise UserError("--torch: the model's output has no floating-point tensor to "
                            "sum for a loss: give --loss FILE.py:CALLABLE")  # fmt: skip
        loss = parts[0]
        for t in parts[1:]:
            loss = loss + t
    if not isinstance(loss, torch.Tensor) or loss.numel() != 1:
        raise UserError("--loss: the loss must be a scalar tensor")
    return loss


def _optimizer(name: str, params: list[Any], backend: str) -> Any:
    import torch

    # PyTorch picks foreach kernels on CUDA and a per-tensor loop on CPU
    foreach = backend == "cuda"
    if name == "sgd":
        return torch.optim.SGD(params, lr=0.01, foreach=foreach)
    if name == "momentum":
        return torch.optim.SGD(params, lr=0.01, momentum=0.9, foreach=foreach)
    if name == "rmsprop":
        return torch.optim.RMSprop(params, lr=0.01, foreach=foreach)
    if name == "adamw":
        return torch.optim.AdamW(params, foreach=foreach)
    return torch.optim.Adam(params, foreach=foreach)


@contextmanager
def _module_hooks(rec: Any, names: dict[int, str]) -> Iterator[None]:
    """Keep `rec.modules` the stack of modules running forward (global hooks, removed after)."""
    from torch.nn.modules import module as mod

    def pre(m: Any, _args: Any) -> None:
        rec.modules.append(names.get(id(m), type(m).__name__))

    def post(m: Any, _args: Any, _out: Any) -> None:
        if rec.modules:
            rec.modules.pop()

    h1 = mod.register_module_forward_pre_hook(pre)
    h2 = mod.register_module_forward_hook(post)
    try:
        yield
    finally:
        h1.remove()
        h2.remove()


__all__ = ["TRACE_AS", "Facts", "InputShape", "UserCode", "trace_step"]
