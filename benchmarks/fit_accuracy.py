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
      [--model NAME] [--batch 8,32] [--mode inference --mode eval] [--markdown]
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import math
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from gputui.fit.core.breakdown import peak_phase as peak
from gputui.fit.core.precision import policy
from gputui.fit.graph.memory import model_phases
from gputui.fit.graph.network import Node, Ref
from gputui.fit.importers.modelsfile import ModelSpec, Network, layer_models, load_models

sys.path.insert(0, str(Path(__file__).resolve().parent))  # also when a test loads this file
from torch_memory import peak_cpu_bytes, peak_cuda_bytes  # noqa: E402

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
            native: list[int] = [0] * rank
            if raw.get("padding", "valid") == "same":
                # Keras' torch backend: the pooling's own padding where it is the
                # same on both sides of every axis, else a padded copy
                sides = [
                    _same_pads(L, p, s, 1)
                    for L, p, s in zip(self.in_shape[:-1], ps, st, strict=True)
                ]
                if all(lo == hi for lo, hi in sides):
                    native = [lo for lo, _ in sides]
                else:
                    pads = [v for side in reversed(sides) for v in side]
                    x = F.pad(x, pads, value=-math.inf if k.startswith("Max") else 0.0)
            fn: Any = {
                "MaxPooling2D": F.max_pool2d,
                "AveragePooling2D": functools.partial(F.avg_pool2d, count_include_pad=False),
                "MaxPooling1D": F.max_pool1d,
                "AveragePooling1D": functools.partial(F.avg_pool1d, count_include_pad=False),
            }[k]
            y = fn(x, ps, st, native)
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
            return _keras_relu(x, raw)
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


def _keras_relu(x: torch.Tensor, raw: Mapping[str, Any]) -> torch.Tensor:
    """Keras 3's ReLU.static_call on the torch backend (relu6 for max_value = 6 alone)."""
    max_value = raw.get("max_value")
    slope = float(raw.get("negative_slope") or 0.0)
    threshold = float(raw.get("threshold") or 0.0)
    if slope and max_value is None and not threshold:
        return F.leaky_relu(x, slope)
    negative = F.relu(-x + threshold) if slope else None
    clip = max_value is not None
    if threshold:
        x = x * (x > threshold).to(x.dtype)
    elif max_value == 6:
        x, clip = F.relu6(x), False
    else:
        x = F.relu(x)
    if clip:
        x = torch.clamp(x, 0.0, float(max_value))
    if negative is not None:
        x = x - slope * negative
    return x


def _channel_axis(keras_index: int, rank: int) -> int:
    """A per-sample Keras axis (channels last) as a dim of the PyTorch tensor (N, C, H, W)."""
    if rank != 3:
        return keras_index + 1
    return {0: 2, 1: 3, 2: 1}[keras_index]


class Merge(nn.Module):
    def __init__(self, kind: str, raw: Mapping[str, Any], in_shapes: tuple[tuple[int, ...], ...]):
        super().__init__()
        self.kind = kind
        rank = len(in_shapes[0])
        axis = int(raw.get("axis", -1))
        index = axis - 1 if axis > 0 else rank + axis
        self.dim = _channel_axis(index, rank)

    def forward(self, *xs: torch.Tensor) -> torch.Tensor:
        k = self.kind
        if k == "Concatenate":
            return torch.cat(xs, dim=self.dim)
        out = xs[0]
        for x in xs[1:]:
            if k in ("Add", "Average"):
                out = out + x
            elif k == "Subtract":
                out = out - x
            elif k == "Multiply":
                out = out * x
            elif k == "Maximum":
                out = torch.maximum(out, x)
            elif k == "Minimum":
                out = torch.minimum(out, x)
        return out / len(xs) if k == "Average" else out


class MHA(nn.Module):
    """Keras 3's MultiHeadAttention as its torch backend runs it (EinsumDense projections).

    Eager path (dropout > 0, or attention = "eager"): scale the query, einsum scores,
    softmax, dropout, einsum with the values. Fused path: scaled_dot_product_attention.
    """

    def __init__(self, raw: Mapping[str, Any], shapes: tuple[tuple[int, ...], ...], mode: str):
        super().__init__()
        h, kd = int(raw["num_heads"]), int(raw["key_dim"])
        vd = int(raw.get("value_dim") or kd)
        q, v = shapes[0], shapes[1]
        k = shapes[2] if len(shapes) == 3 else v
        out = int(raw.get("output_shape") or q[-1])
        self.h, self.kd = h, kd
        self.wq = nn.Parameter(torch.randn(q[-1], h, kd) * 0.05)
        self.bq = nn.Parameter(torch.zeros(h, kd))
        self.wk = nn.Parameter(torch.randn(k[-1], h, kd) * 0.05)
        self.bk = nn.Parameter(torch.zeros(h, kd))
        self.wv = nn.Parameter(torch.randn(v[-1], h, vd) * 0.05)
        self.bv = nn.Parameter(torch.zeros(h, vd))
        self.wo = nn.Parameter(torch.randn(h, vd, out) * 0.05)
        self.bo = nn.Parameter(torch.zeros(out))
        self.rate = float(raw.get("dropout") or 0.0)
        self.eager = mode == "eager" or (mode == "auto" and self.rate > 0)

    def forward(
        self, query: torch.Tensor, value: torch.Tensor, key: torch.Tensor | None = None
    ) -> torch.Tensor:
        key = value if key is None else key
        q = torch.einsum("abc,cde->abde", query, self.wq) + self.bq
        k = torch.einsum("abc,cde->abde", key, self.wk) + self.bk
        v = torch.einsum("abc,cde->abde", value, self.wv) + self.bv
        if self.eager:
            q = q * (1.0 / math.sqrt(self.kd))
            scores = torch.einsum("aecd,abcd->acbe", k, q)
            probs = torch.softmax(scores, dim=-1)
            probs = F.dropout(probs, self.rate, self.training) if self.rate else probs
            o = torch.einsum("acbe,aecd->abcd", probs, v)
        else:
            o = F.scaled_dot_product_attention(
                q.transpose(1, 2),
                k.transpose(1, 2),
                v.transpose(1, 2),
                scale=1 / math.sqrt(self.kd),
            ).transpose(1, 2)
        return torch.einsum("abcd,cde->abe", o, self.wo) + self.bo


class TokenAndPosition(nn.Module):
    def __init__(self, raw: Mapping[str, Any]):
        super().__init__()
        self.tok = nn.Embedding(int(raw["vocabulary_size"]), int(raw["embedding_dim"]))
        self.pos = nn.Parameter(torch.randn(int(raw["sequence_length"]), int(raw["embedding_dim"])))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.tok(x) + self.pos[: x.shape[1]]


class Recurrent(nn.Module):
    """LSTM/GRU/SimpleRNN with Keras' return_state and initial_state (extra inputs)."""

    def __init__(self, raw: Mapping[str, Any], in_shape: tuple[int, ...]):
        super().__init__()
        cls = {"SimpleRNN": nn.RNN, "LSTM": nn.LSTM, "GRU": nn.GRU}[str(raw["type"])]
        self.mod = cls(in_shape[-1], int(raw["units"]), batch_first=True)
        self.seq = bool(raw.get("return_sequences", False))
        self.state = bool(raw.get("return_state", False))
        self.lstm = raw["type"] == "LSTM"

    def forward(self, x: torch.Tensor, *states: torch.Tensor) -> Any:
        init: Any = None
        if states:
            init = tuple(s.unsqueeze(0) for s in states) if self.lstm else states[0].unsqueeze(0)
        out, hc = self.mod(x, init)
        h, c = (hc[0][-1], hc[1][-1]) if self.lstm else (hc[-1], None)
        y = out if self.seq else h
        if not self.state:
            return y
        return (y, h, c) if self.lstm else (y, h)


def _module(node: Node, attention: str) -> nn.Module:
    raw, kind = node.raw, node.stats.type
    shapes = node.input_shapes
    if kind in ("Add", "Subtract", "Multiply", "Average", "Maximum", "Minimum", "Concatenate"):
        return Merge(kind, raw, shapes)
    if kind == "MultiHeadAttention":
        return MHA(raw, shapes, str(raw.get("attention", attention)))
    if kind == "TokenAndPositionEmbedding":
        return TokenAndPosition(raw)
    if kind in ("LSTM", "GRU", "SimpleRNN") and (len(shapes) > 1 or raw.get("return_state")):
        return Recurrent(raw, shapes[0])
    return Layer(raw, shapes[0], node.stats.output_shape)


class GraphNet(nn.Module):
    """A Network run as Keras runs a functional model: in graph order, each tensor
    dropped once its last reader has it (Keras' Functional frees by use count)."""

    def __init__(self, net: Network, attention: str = "auto"):
        super().__init__()
        self.net = net
        self.mods = nn.ModuleList()
        slot: dict[str, int] = {}
        self.which: list[int] = []
        self.frozen: list[nn.Module] = []
        for node in net.nodes:
            if node.shared:
                self.which.append(slot[node.weights])
                continue
            mod = _module(node, attention)
            if node.stats.params and not node.stats.trainable_params:
                mod.requires_grad_(False)
                self.frozen.append(mod)
            slot[node.name] = len(self.mods)
            self.which.append(len(self.mods))
            self.mods.append(mod)
        uses: dict[Ref, int] = {}
        for node in net.nodes:
            for r in node.inputs:
                uses[r] = uses.get(r, 0) + 1
        for r in net.outputs:
            uses[r] = uses.get(r, 0) + 1
        self.uses = uses

    def train(self, mode: bool = True) -> GraphNet:
        super().train(mode)
        for mod in self.frozen:
            mod.eval()  # Keras 3: a frozen BatchNormalization runs in inference mode
        return self

    def forward(self, *inputs: torch.Tensor) -> Any:
        vals: dict[Ref, torch.Tensor] = {(-1 - k, 0): x for k, x in enumerate(inputs)}
        left = dict(self.uses)
        for i, node in enumerate(self.net.nodes):
            args = [vals[r] for r in node.inputs]
            for r in node.inputs:
                left[r] -= 1
                if left[r] == 0:
                    del vals[r]
            out = self.mods[self.which[i]](*args)
            del args
            outs = out if isinstance(out, tuple) else (out,)
            for k, o in enumerate(outs):
                if left.get((i, k), 0):
                    vals[(i, k)] = o
            del out, outs
        results = [vals[r] for r in self.net.outputs]
        return results[0] if len(results) == 1 else results


def build(net: Network, attention: str = "auto") -> GraphNet:
    return GraphNet(net, attention)


def make_inputs(net: Network, batch: int, device: str) -> list[torch.Tensor]:
    out = []
    for k, inp in enumerate(net.inputs):
        if inp.integer:
            reader = next(n for n in net.nodes if (-1 - k, 0) in n.inputs)
            vocab = int(reader.raw.get("input_dim") or reader.raw.get("vocabulary_size"))
            out.append(torch.randint(0, vocab, (batch, *inp.shape), device=device))
            continue
        s = inp.shape
        shape = (batch, s[2], s[0], s[1]) if len(s) == 3 else (batch, *s)
        out.append(torch.randn(shape, device=device))
    return out


def make_input(net: Network, batch: int, device: str) -> torch.Tensor:
    return make_inputs(net, batch, device)[0]


def _loss(out: Any) -> torch.Tensor:
    # keeps each output, as cross-entropy keeps its log-softmax; one loss per output
    outs = out if isinstance(out, list) else [out]
    return sum((o.float().pow(2).mean() for o in outs), torch.zeros(()))


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
    if model.mode in ("inference", "eval"):
        # inference: a forward without labels; eval: the same forward and its loss
        net_spec = model.network or model.generator
        assert net_spec is not None
        infer = _cast(build(net_spec, model.attention).to(device).eval(), precision)
        xs = [_cast(x, precision) for x in make_inputs(net_spec, batch, device)]
        with torch.no_grad():
            for _ in range(steps):
                with amp():
                    out = infer(*xs)
                if model.mode == "eval":
                    _loss(out)
                del out
        return
    if model.network is not None:
        net = _cast(build(model.network, model.attention).to(device).train(), precision)
        opt = _optimizer([q for q in net.parameters() if q.requires_grad], model.optimizer)
        xs = [_cast(x, precision) for x in make_inputs(model.network, batch, device)]
        for _ in range(steps):
            opt.zero_grad(set_to_none=True)
            with amp():
                loss = _loss(net(*xs))
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
    return peak_cpu_bytes(lambda: run_steps(model, batch, "cpu", steps, precision))


def measure_cuda(model: ModelSpec, batch: int, steps: int = 3, precision: str = "fp32") -> int:
    return peak_cuda_bytes(lambda: run_steps(model, batch, "cuda", steps, precision))


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
    ap.add_argument(
        "--mode",
        action="append",
        choices=["train", "inference", "eval"],
        help="measure each model in these modes (repeatable; default: each model's own)",
    )
    args = ap.parse_args(argv)
    torch.set_num_threads(max(1, torch.get_num_threads()))
    models = [
        m for m in layer_models(load_models(args.models)) if not args.model or m.name in args.model
    ]  # measured in PyTorch from the layer lists; transformers have their own benchmark
    if args.mode:
        models = [replace(m, mode=mode) for m in models for mode in args.mode]
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
                    m.optimizer if m.mode == "train" else m.mode,
                    b,
                    est,
                    measured,
                    err,
                    phase,
                    time.perf_counter() - t0,
                )
            )
            print(
                f"{m.name:22} {m.optimizer if m.mode == 'train' else m.mode:9} b={b:<4} est {est / 2**20:9.2f} MiB  "
                f"measured {measured / 2**20:9.2f} MiB  {err:+6.1f} %  peak at {phase}",
                file=sys.stderr,
                flush=True,
            )
    if args.markdown:
        print(
            "| model | optimizer (or inference / eval) | batch | estimate MiB | measured MiB | error | estimated peak at |"
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
