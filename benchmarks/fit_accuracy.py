"""Measure real training-step memory in PyTorch and compare it with `gputui fit`'s estimate.

Each model of a models TOML file is translated layer by layer into torch.nn
(channels-last Keras shapes become PyTorch's channels-first tensors), trained for
a few steps, and its peak tensor memory is measured:
  * CPU: the profiler's allocation events (profile_memory=True) carry the
    allocator's running total; the peak of that total during the steps, minus
    what was allocated before the model was built;
  * CUDA: torch.cuda.max_memory_allocated after reset_peak_memory_stats.
The estimate compared is tensor memory only (no CUDA context, no allocator
slack), computed for the same backend (`cpu` or `cuda`: they differ in what
dropout keeps and in the optimizer's temporaries).

Needs the `calibrate` extra:  .venv/bin/pip install torch==2.13.0
Run:  .venv/bin/python benchmarks/fit_accuracy.py [examples/models.toml] [--device cpu|cuda]
      [--model NAME] [--batch 8,32] [--markdown]
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import math
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from gputui.fit.config import ModelSpec, Network, load_models
from gputui.fit.memory import model_phases, peak
from gputui.fit.precision import policy

ROOT = Path(__file__).resolve().parent.parent

ACT: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "linear": lambda x: x,
    "relu": F.relu,
    "sigmoid": torch.sigmoid,
    "tanh": torch.tanh,
    "softmax": lambda x: torch.softmax(x, dim=-1),
    "log_softmax": lambda x: torch.log_softmax(x, dim=-1),
    "exponential": torch.exp,
    "elu": F.elu,
    "selu": F.selu,
    "gelu": F.gelu,
    "silu": F.silu,
    "swish": F.silu,
    "softplus": F.softplus,
    "softsign": F.softsign,
    "hard_sigmoid": F.hardsigmoid,
    "hard_silu": F.hardswish,
    "hard_swish": F.hardswish,
    "relu6": F.relu6,
    "leaky_relu": lambda x: F.leaky_relu(x, 0.2),
    "mish": F.mish,
    "celu": F.celu,
}


def _pair(v: Any, n: int = 2) -> tuple[int, ...]:
    return tuple(v) if isinstance(v, list) else (v,) * n


def _same_pads(length: int, k: int, s: int, d: int) -> tuple[int, int]:
    dk = (k - 1) * d + 1
    out = (length - 1) // s + 1
    total = max((out - 1) * s + dk - length, 0)
    return total // 2, total - total // 2


class Layer(nn.Module):
    """One Keras layer in PyTorch; tensors stay in PyTorch's layout (N, C, H, W) / (N, T, F)."""

    def __init__(
        self, raw: Mapping[str, Any], in_shape: tuple[int, ...], out_shape: tuple[int, ...]
    ):
        super().__init__()
        self.raw = dict(raw)
        self.kind = str(raw["type"])
        self.in_shape = in_shape
        self.out_shape = out_shape
        self.act = ACT[str(raw.get("activation") or "linear").lower()]
        k = self.kind
        bias = bool(raw.get("use_bias", True))
        if k in ("Conv2D", "Conv1D"):
            rank = 2 if k == "Conv2D" else 1
            ks, st, dl = (
                _pair(raw.get(n, 1), rank) for n in ("kernel_size", "strides", "dilation_rate")
            )
            cls = nn.Conv2d if rank == 2 else nn.Conv1d
            self.mod: nn.Module = cls(
                in_shape[-1],
                raw["filters"],
                ks,
                st,
                dilation=dl,
                groups=raw.get("groups", 1),
                bias=bias,
            )
            self.pads = self._pads(raw, in_shape[:-1], ks, st, dl)
            if self.pads is not None and len(self.pads) == rank:
                self.mod.padding, self.pads = tuple(self.pads), None
        elif k == "Conv2DTranspose":
            ks, st, dl = (_pair(raw.get(n, 1)) for n in ("kernel_size", "strides", "dilation_rate"))
            pads, ops = [], []
            for L, o, kk, s, d in zip(in_shape[:-1], out_shape[:-1], ks, st, dl, strict=True):
                dk = (kk - 1) * d + 1
                extra = o - ((L - 1) * s + dk)  # = output_padding - 2 * padding
                p = max(0, math.ceil(-extra / 2))
                pads.append(p)
                ops.append(extra + 2 * p)
            self.mod = nn.ConvTranspose2d(
                in_shape[-1],
                raw["filters"],
                ks,
                st,
                tuple(pads),
                tuple(ops),
                bias=bias,
                dilation=dl,
            )
        elif k in ("DepthwiseConv2D", "SeparableConv2D"):
            ks, st, dl = (_pair(raw.get(n, 1)) for n in ("kernel_size", "strides", "dilation_rate"))
            c = in_shape[-1]
            m = raw.get("depth_multiplier", 1)
            self.mod = nn.Conv2d(
                c, c * m, ks, st, dilation=dl, groups=c, bias=bias and k == "DepthwiseConv2D"
            )
            self.pads = self._pads(raw, in_shape[:-1], ks, st, dl)
            if self.pads is not None and len(self.pads) == 2:
                self.mod.padding, self.pads = tuple(self.pads), None
            self.point = (
                nn.Conv2d(c * m, raw["filters"], 1, bias=bias) if k == "SeparableConv2D" else None
            )
        elif k == "Dense":
            self.mod = nn.Linear(in_shape[-1], raw["units"], bias=bias)
        elif k == "BatchNormalization":
            self.mod = (
                nn.BatchNorm1d(out_shape[-1], eps=1e-3)
                if len(in_shape) < 3
                else nn.BatchNorm2d(out_shape[-1], eps=1e-3)
            )
        elif k == "LayerNormalization":
            self.mod = nn.LayerNorm(in_shape[-1], eps=1e-3)
        elif k == "Embedding":
            self.mod = nn.Embedding(raw["input_dim"], raw["output_dim"])
        elif k in ("SimpleRNN", "LSTM", "GRU", "Bidirectional"):
            inner = raw["layer"] if k == "Bidirectional" else raw
            cls = {"SimpleRNN": nn.RNN, "LSTM": nn.LSTM, "GRU": nn.GRU}[inner["type"]]
            self.mod = cls(
                in_shape[-1], inner["units"], batch_first=True, bidirectional=k == "Bidirectional"
            )
            self.seq = bool(inner.get("return_sequences", False))
            self.merge = raw.get("merge_mode", "concat")
        elif k == "Dropout":
            self.mod = nn.Dropout(raw["rate"])

    @staticmethod
    def _pads(
        raw: Mapping[str, Any], spatial: tuple[int, ...], ks: Any, st: Any, dl: Any
    ) -> list[int] | None:
        padding = raw.get("padding", "valid")
        if padding == "valid":
            return None
        symmetric = []
        for L, kk, s, d in zip(spatial, ks, st, dl, strict=True):
            lo, hi = _same_pads(L, kk, s, d)
            p = (lo + hi + 1) // 2
            if padding == "causal" or (L + 2 * p - (kk - 1) * d - 1) // s + 1 != (L - 1) // s + 1:
                break
            symmetric.append(p)
        else:
            return symmetric  # what a PyTorch user writes: the convolution pads itself
        pads: list[int] = []
        for L, kk, s, d in reversed(list(zip(spatial, ks, st, dl, strict=True))):
            lo, hi = _same_pads(L, kk, s, d)
            if padding == "causal":
                lo, hi = lo + hi, 0
            pads += [lo, hi]
        return pads

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        k, raw = self.kind, self.raw
        if k in ("InputLayer", "Flatten"):
            return x.flatten(1) if k == "Flatten" else x
        if k == "Reshape":
            t = raw["target_shape"]
            shape = [x.shape[0], *self.out_shape]
            if len(t) == 3:
                shape = [x.shape[0], self.out_shape[2], self.out_shape[0], self.out_shape[1]]
            return x.reshape(shape)
        if k in ("Conv2D", "DepthwiseConv2D", "SeparableConv2D"):
            if self.pads:
                x = F.pad(x, self.pads)
            x = self.mod(x)
            if k == "SeparableConv2D":
                assert self.point is not None
                x = self.point(x)
            return self.act(x)
        if k == "Conv1D":
            x = x.transpose(1, 2)
            if self.pads:
                x = F.pad(x, self.pads)
            return self.act(self.mod(x)).transpose(1, 2)
        if k == "Conv2DTranspose":
            return self.act(self.mod(x))
        if k == "Dense":
            if x.dim() == 4:
                return self.act(self.mod(x.permute(0, 2, 3, 1))).permute(0, 3, 1, 2)
            return self.act(self.mod(x))
        if k in ("MaxPooling2D", "AveragePooling2D", "MaxPooling1D", "AveragePooling1D"):
            rank = 2 if k.endswith("2D") else 1
            ps = _pair(raw.get("pool_size", 2), rank)
            st = _pair(raw["strides"], rank) if raw.get("strides") is not None else ps
            if rank == 1:
                x = x.transpose(1, 2)
            if raw.get("padding", "valid") == "same":
                pads = []
                for L, p, s in reversed(list(zip(self.in_shape[:-1], ps, st, strict=True))):
                    pads += list(_same_pads(L, p, s, 1))
                x = F.pad(x, pads, value=-math.inf if k.startswith("Max") else 0.0)
            fn: Any = {
                "MaxPooling2D": F.max_pool2d,
                "AveragePooling2D": F.avg_pool2d,
                "MaxPooling1D": F.max_pool1d,
                "AveragePooling1D": F.avg_pool1d,
            }[k]
            y = fn(x, ps, st)
            return y.transpose(1, 2) if rank == 1 else y
        if k.startswith("Global"):
            dims = (2, 3) if k.endswith("2D") else (1,)
            keep = bool(raw.get("keepdims", False))
            return x.mean(dims, keepdim=keep) if "Average" in k else x.amax(dims, keepdim=keep)
        if k == "Dropout":
            return self.mod(x)
        if k == "BatchNormalization":
            if x.dim() == 3:
                return self.mod(x.transpose(1, 2)).transpose(1, 2)
            return self.mod(x)
        if k == "LayerNormalization":
            if x.dim() == 4:
                return self.mod(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)
            return self.mod(x)
        if k == "Activation":
            return self.act(x)
        if k == "ReLU":
            return F.relu(x)
        if k == "LeakyReLU":
            return F.leaky_relu(x, float(raw.get("negative_slope", raw.get("alpha", 0.3))))
        if k == "UpSampling2D":
            return F.interpolate(x, scale_factor=_pair(raw.get("size", 2)), mode="nearest")
        if k == "ZeroPadding2D":
            p = raw.get("padding", 1)
            if isinstance(p, int):
                p = [[p, p], [p, p]]
            elif not isinstance(p[0], list):
                p = [[p[0], p[0]], [p[1], p[1]]]
            return F.pad(x, (p[1][0], p[1][1], p[0][0], p[0][1]))
        if k == "Embedding":
            return self.mod(x)
        if k in ("SimpleRNN", "LSTM", "GRU", "Bidirectional"):
            out, h = self.mod(x)
            if isinstance(h, tuple):
                h = h[0]
            if self.seq:
                y = out
            else:
                y = torch.cat([h[-2], h[-1]], dim=-1) if k == "Bidirectional" else h[-1]
            if k == "Bidirectional" and self.merge != "concat":
                a, b = y.chunk(2, dim=-1)
                y = {"sum": a + b, "mul": a * b, "ave": (a + b) / 2}[self.merge]
            return y
        raise NotImplementedError(k)


def build(net: Network) -> nn.Sequential:
    mods = []
    shape = net.input_shape
    for raw, stats in zip(net.raw_layers, net.layers, strict=True):
        mods.append(Layer(raw, shape, stats.output_shape))
        shape = stats.output_shape
    return nn.Sequential(*mods)


def make_input(net: Network, batch: int, device: str) -> torch.Tensor:
    if net.integer_input:
        vocab = next(r["input_dim"] for r in net.raw_layers if r["type"] == "Embedding")
        return torch.randint(0, vocab, (batch, *net.input_shape), device=device)
    s = net.input_shape
    shape = (batch, s[2], s[0], s[1]) if len(s) == 3 else (batch, *s)
    return torch.randn(shape, device=device)


def _loss(out: torch.Tensor) -> torch.Tensor:
    return out.float().pow(2).mean()  # keeps the output, as cross-entropy keeps its log-softmax


def _optimizer(params: Any, name: str) -> torch.optim.Optimizer:
    if name == "sgd":
        return torch.optim.SGD(params, lr=1e-3)
    if name == "momentum":
        return torch.optim.SGD(params, lr=1e-3, momentum=0.9)
    if name == "rmsprop":
        return torch.optim.RMSprop(params, lr=1e-3)
    if name == "adamw":
        return torch.optim.AdamW(params, lr=1e-3)
    return torch.optim.Adam(params, lr=1e-3)


def _cast(t: torch.Tensor | nn.Module, precision: str) -> Any:
    """Pure 16-bit precisions store parameters and float data in 16 bits."""
    if precision in ("bf16", "fp16") and not (
        isinstance(t, torch.Tensor) and not t.is_floating_point()
    ):
        return t.to(torch.bfloat16 if precision == "bf16" else torch.float16)
    return t


def _autocast(device: str, precision: str) -> Any:
    if precision.startswith("amp_"):
        dtype = torch.bfloat16 if precision == "amp_bf16" else torch.float16
        return torch.autocast(device_type=device, dtype=dtype)
    return contextlib.nullcontext()


def run_steps(
    model: ModelSpec, batch: int, device: str, steps: int, precision: str = "fp32"
) -> None:
    torch.manual_seed(0)
    amp = functools.partial(_autocast, device, precision)
    if model.mode == "inference":
        net_spec = model.network or model.generator
        assert net_spec is not None
        infer = _cast(build(net_spec).to(device).eval(), precision)
        x = _cast(make_input(net_spec, batch, device), precision)
        with torch.no_grad():
            for _ in range(steps):
                with amp():
                    infer(x)
        return
    if model.network is not None:
        net = _cast(build(model.network).to(device).train(), precision)
        opt = _optimizer(net.parameters(), model.optimizer)
        x = _cast(make_input(model.network, batch, device), precision)
        for _ in range(steps):
            opt.zero_grad(set_to_none=True)
            with amp():
                loss = _loss(net(x))
            loss.backward()
            del loss
            opt.step()
        return
    assert model.generator is not None and model.discriminator is not None
    gen = _cast(build(model.generator).to(device).train(), precision)
    disc = _cast(build(model.discriminator).to(device).train(), precision)
    opt_g = _optimizer(gen.parameters(), model.optimizer)
    opt_d = _optimizer(disc.parameters(), model.optimizer)
    real = _cast(make_input(model.discriminator, batch, device), precision)
    for _ in range(steps):
        z = _cast(make_input(model.generator, batch, device), precision)
        with torch.no_grad(), amp():
            fake = gen(z)
        opt_d.zero_grad(set_to_none=True)
        with amp():
            loss = _loss(disc(real))
        loss.backward()
        with amp():
            loss = _loss(disc(fake))
        loss.backward()
        del loss
        opt_d.step()
        del fake
        disc.requires_grad_(False)
        opt_g.zero_grad(set_to_none=True)
        with amp():
            loss = _loss(disc(gen(z)))
        loss.backward()
        del loss
        opt_g.step()
        disc.requires_grad_(True)


def measure_cpu(model: ModelSpec, batch: int, steps: int = 3, precision: str = "fp32") -> int:
    from torch._C._profiler import _EventType
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        torch.empty(1)  # marks the allocator total before the model exists
        run_steps(model, batch, "cpu", steps, precision)
    events = []
    stack = list(prof.profiler.kineto_results.experimental_event_tree())  # type: ignore[union-attr]
    while stack:
        e = stack.pop()
        if e.tag == _EventType.Allocation:
            events.append(
                (e.start_time_ns, e.extra_fields.total_allocated, e.extra_fields.alloc_size)
            )
        stack.extend(e.children)
    events.sort()
    # the first event is the 4-byte marker: the total before it is the baseline
    baseline = events[0][1] - events[0][2]
    return max(total for _, total, _ in events) - baseline - 4


def measure_cuda(model: ModelSpec, batch: int, steps: int = 3, precision: str = "fp32") -> int:
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    before = torch.cuda.memory_allocated()
    run_steps(model, batch, "cuda", steps, precision)
    torch.cuda.synchronize()
    return torch.cuda.max_memory_allocated() - before


def estimate(
    model: ModelSpec, batch: int, backend: str, precision: str = "fp32"
) -> tuple[int, str]:
    phases = model_phases(model, policy(precision), "cpu" if backend == "cpu" else "cuda")
    phase, parts = peak(phases, batch)
    return parts.total, phase.name


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("models", nargs="?", type=Path, default=ROOT / "examples" / "models.toml")
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    ap.add_argument(
        "--precision",
        choices=["fp32", "bf16", "amp_bf16", "fp16", "amp_fp16"],
        default="fp32",
        help="fp16/amp_fp16 need CUDA",
    )
    ap.add_argument("--model", action="append", help="only these models (repeatable)")
    ap.add_argument("--batch", help="comma-separated batch sizes (default: per model)")
    ap.add_argument("--markdown", action="store_true", help="print a Markdown table")
    args = ap.parse_args(argv)
    torch.set_num_threads(max(1, torch.get_num_threads()))
    models = [m for m in load_models(args.models) if not args.model or m.name in args.model]
    rows = []
    for m in models:
        big = m.flops * 3 > 5e9
        batches = (
            [int(b) for b in args.batch.split(",")]
            if args.batch
            else ([1, 2, 4] if big else [8, 32, 128])
        )
        for b in batches:
            t0 = time.perf_counter()
            measure = measure_cpu if args.device == "cpu" else measure_cuda
            measured = measure(m, b, precision=args.precision)
            est, phase = estimate(m, b, args.device, args.precision)
            err = (est - measured) / measured * 100
            rows.append(
                (
                    m.name,
                    m.optimizer if m.mode == "train" else "inference",
                    b,
                    est,
                    measured,
                    err,
                    phase,
                    time.perf_counter() - t0,
                )
            )
            print(
                f"{m.name:22} {m.optimizer:8} b={b:<4} est {est / 2**20:9.2f} MiB  "
                f"measured {measured / 2**20:9.2f} MiB  {err:+6.1f} %  peak at {phase}",
                file=sys.stderr,
                flush=True,
            )
    if args.markdown:
        print(
            "| model | optimizer (or inference) | batch | estimate MiB | measured MiB | error | estimated peak at |"
        )
        print("|---|---|---:|---:|---:|---:|---|")
        for name, opt, b, est, meas, err, phase, _ in rows:
            print(
                f"| {name} | {opt} | {b} | {est / 2**20:.2f} | {meas / 2**20:.2f} | {err:+.1f} % | {phase} |"
            )
    worst_over = max((r[5] for r in rows), default=0.0)
    worst_under = min((r[5] for r in rows), default=0.0)
    print(
        f"\nworst over-estimate {worst_over:+.1f} %, worst under-estimate {worst_under:+.1f} %",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
