"""Measure transformer memory in plain PyTorch on CPU and compare it with gputui's LLM estimate.

Three small models are built from Hugging Face-style configs, layer by layer the
way transformers implements them (GPT-2: fused qkv, python GELU-tanh, dropout,
tied head; Llama: RMSNorm upcast, RoPE, grouped-query attention with repeat_kv for
eager, SwiGLU; BERT: post-norm encoder with pooler), then run:
  * train: real AdamW steps, full fine-tune (fp32) and LoRA (q,k,v,o, rank 8), in the
    plain loop (the logits held through the backward and the step; gputui's default
    --loop; benchmarks/hf_train_memory.py measures the Trainer's loop too);
  * inference: one no-grad forward without labels (what serving and batch scoring run:
    the logits of every position, in the model's dtype, and nothing more);
  * eval: one no-grad forward with labels and the loss (the logits' fp32 copy and the
    log-softmax of cross-entropy on top);
  * generate: prefill with a KV cache, then decode steps growing it by concatenation;
at several batch sizes and sequence lengths, with sdpa and eager attention.

The peak tensor memory is the CPU profiler's allocator total (profile_memory=True),
as benchmarks/fit_accuracy.py measures it; the estimate is gputui's with the `cpu`
backend (tensor bytes only: no CUDA context, no allocator slack). KV-cache bytes are
checked exactly against the formula and llama.cpp's published Llama-3-8B figure.

Needs torch (the `calibrate` extra):  .venv/bin/pip install torch==2.13.0
Run:  .venv/bin/python benchmarks/llm_accuracy.py [--markdown] [--quick] [--mode inference ...]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from gputui.fit.importers.hfkeys import from_hf_dict
from gputui.fit.transformer.estimate import memory
from gputui.fit.transformer.kv import kv_cache_bytes
from gputui.fit.transformer.model import TransformerModel, from_config
from gputui.fit.transformer.workload import Workload

sys.path.insert(0, str(Path(__file__).resolve().parent))  # also when a test loads this file
from torch_memory import peak_cpu_bytes  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent

CONFIGS: dict[str, dict[str, Any]] = {
    "gpt2-mini": dict(model_type="gpt2", n_embd=256, n_layer=4, n_head=4, n_positions=1024,
                      vocab_size=8192, attn_pdrop=0.1, resid_pdrop=0.1, activation_function="gelu_new"),
    "llama-gqa-mini": dict(model_type="llama", hidden_size=256, num_hidden_layers=4,
                           num_attention_heads=8, num_key_value_heads=2, intermediate_size=688,
                           vocab_size=8192, max_position_embeddings=4096),
    "bert-mini": dict(model_type="bert", hidden_size=256, num_hidden_layers=4, num_attention_heads=4,
                      intermediate_size=1024, vocab_size=8192, max_position_embeddings=512,
                      type_vocab_size=2),
}  # fmt: skip


def gputui_model(name: str) -> TransformerModel:
    # GPT-2's activation_function (gelu_new) is read from the config like every other key
    return from_config(from_hf_dict(dict(CONFIGS[name])), name, "benchmark")


# ------------------------------------------------------------------ the models in PyTorch


class LoRALinear(nn.Module):
    def __init__(self, base: nn.Linear, rank: int) -> None:
        super().__init__()
        self.base = base
        self.a = nn.Linear(base.in_features, rank, bias=False)
        self.b = nn.Linear(rank, base.out_features, bias=False)
        self.scale = 2.0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.base(x) + self.b(self.a(x)) * self.scale


def gelu_new(x: torch.Tensor) -> torch.Tensor:
    return (
        0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))
    )


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)


def repeat_kv(x: torch.Tensor, n: int) -> torch.Tensor:
    if n == 1:
        return x
    b, h, s, d = x.shape
    return x[:, :, None].expand(b, h, n, s, d).reshape(b, h * n, s, d)


def grow_cache(
    cache: list[Any] | None, k: torch.Tensor, v: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """transformers 5.24's DynamicLayer: K and V grow by concatenation each step, the first
    onto an empty tensor (a copy: the cache never holds views of the qkv projection)."""
    if cache is None:
        return k, v
    if not cache:
        cache.extend(
            [k.new_empty((*k.shape[:2], 0, k.shape[3])), v.new_empty((*v.shape[:2], 0, v.shape[3]))]
        )
    k, v = torch.cat([cache[0], k], dim=2), torch.cat([cache[1], v], dim=2)
    cache[0], cache[1] = k, v
    return k, v


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, impl: str, causal: bool,
              dropout: float, training: bool, fp32_softmax: bool) -> torch.Tensor:  # fmt: skip
    groups = q.shape[1] // k.shape[1]
    if impl == "sdpa":
        return F.scaled_dot_product_attention(
            q, k, v, is_causal=causal and q.shape[2] > 1, dropout_p=dropout if training else 0.0,
            enable_gqa=groups > 1,
        )  # fmt: skip
    k, v = repeat_kv(k, groups), repeat_kv(v, groups)
    w = torch.matmul(q, k.transpose(2, 3)) * (q.shape[-1] ** -0.5)
    if causal and q.shape[2] > 1:
        s = q.shape[2]
        # one (seq x seq) mask per sequence, as transformers builds it for eager attention
        mask = torch.full((q.shape[0], 1, s, s), float("-inf"), dtype=q.dtype).triu(1)
        w = w + mask
    w = (
        F.softmax(w, dim=-1, dtype=torch.float32).to(q.dtype)
        if fp32_softmax
        else F.softmax(w, dim=-1)
    )
    w = F.dropout(w, p=dropout, training=training)
    return torch.matmul(w, v)


class RMSNorm(nn.Module):
    def __init__(self, n: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(n))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        dtype = x.dtype
        x = x.to(torch.float32)
        var = x.pow(2).mean(-1, keepdim=True)
        x = x * torch.rsqrt(var + 1e-5)
        return self.weight * x.to(dtype)


class LlamaLayer(nn.Module):
    def __init__(self, c: dict[str, Any], impl: str) -> None:
        super().__init__()
        h, nh, kv = c["hidden_size"], c["num_attention_heads"], c["num_key_value_heads"]
        self.nh, self.kv, self.hd, self.impl = nh, kv, h // nh, impl
        self.q, self.k = (
            nn.Linear(h, nh * self.hd, bias=False),
            nn.Linear(h, kv * self.hd, bias=False),
        )
        self.v, self.o = (
            nn.Linear(h, kv * self.hd, bias=False),
            nn.Linear(nh * self.hd, h, bias=False),
        )
        i = c["intermediate_size"]
        self.gate, self.up, self.down = (
            nn.Linear(h, i, bias=False),
            nn.Linear(h, i, bias=False),
            nn.Linear(i, h, bias=False),
        )
        self.n1, self.n2 = RMSNorm(h), RMSNorm(h)

    def forward(
        self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, cache: list[Any] | None
    ) -> torch.Tensor:
        # attention in its own method, as transformers' LlamaAttention: q, k, v die with it
        x = x + self.attention(self.n1(x), cos, sin, cache)
        r = x
        x = self.n2(x)
        return r + self.down(F.silu(self.gate(x)) * self.up(x))

    def attention(
        self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, cache: list[Any] | None
    ) -> torch.Tensor:
        b, s, _ = x.shape
        q = self.q(x).view(b, s, self.nh, self.hd).transpose(1, 2)
        k = self.k(x).view(b, s, self.kv, self.hd).transpose(1, 2)
        v = self.v(x).view(b, s, self.kv, self.hd).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        k, v = grow_cache(cache, k, v)
        a = attention(q, k, v, self.impl, True, 0.0, self.training, True)
        return self.o(a.transpose(1, 2).contiguous().view(b, s, -1))


class Llama(nn.Module):
    def __init__(self, c: dict[str, Any], impl: str) -> None:
        super().__init__()
        self.c = c
        self.embed = nn.Embedding(c["vocab_size"], c["hidden_size"])
        self.layers = nn.ModuleList(LlamaLayer(c, impl) for _ in range(c["num_hidden_layers"]))
        self.norm = RMSNorm(c["hidden_size"])
        self.head = nn.Linear(c["hidden_size"], c["vocab_size"], bias=False)
        hd = c["hidden_size"] // c["num_attention_heads"]
        self.register_buffer(
            "inv", 1.0 / (10000 ** (torch.arange(0, hd, 2).float() / hd)), persistent=False
        )

    def forward(
        self,
        ids: torch.Tensor,
        caches: list[list[Any]] | None = None,
        start: int = 0,
        last_only: bool = False,
    ) -> torch.Tensor:
        x = inputs_embeds = self.embed(ids)  # LlamaModel keeps it as a local through the layers
        pos = torch.arange(start, start + ids.shape[1]).float()
        f = torch.outer(pos, self.inv)
        emb = torch.cat((f, f), dim=-1)
        cos, sin = emb.cos()[None, None], emb.sin()[None, None]
        for i, layer in enumerate(self.layers):
            x = layer(x, cos, sin, caches[i] if caches is not None else None)
        del inputs_embeds
        x = self.norm(x)
        return self.head(x[:, -1:] if last_only else x)

    def lora(self, rank: int) -> None:
        self.requires_grad_(False)
        for layer in self.layers:
            for n in ("q", "k", "v", "o"):
                setattr(layer, n, LoRALinear(getattr(layer, n), rank))


class GPT2Layer(nn.Module):
    def __init__(self, c: dict[str, Any], impl: str) -> None:
        super().__init__()
        h = c["n_embd"]
        self.nh, self.impl, self.p = c["n_head"], impl, c["attn_pdrop"]
        self.ln1, self.ln2 = nn.LayerNorm(h), nn.LayerNorm(h)
        self.qkv, self.proj = nn.Linear(h, 3 * h), nn.Linear(h, h)
        self.fc, self.out = nn.Linear(h, 4 * h), nn.Linear(4 * h, h)
        self.drop = nn.Dropout(c["resid_pdrop"])

    def forward(self, x: torch.Tensor, cache: list[Any] | None) -> torch.Tensor:
        attn_output = self.attention(self.ln1(x), cache)  # a local through the MLP, as in GPT2Block
        x = x + self.drop(attn_output)
        return x + self.drop(self.out(gelu_new(self.fc(self.ln2(x)))))

    def attention(self, x: torch.Tensor, cache: list[Any] | None) -> torch.Tensor:
        b, s, h = x.shape
        q, k, v = self.qkv(x).split(h, dim=2)
        q, k, v = (t.view(b, s, self.nh, h // self.nh).transpose(1, 2) for t in (q, k, v))
        k, v = grow_cache(cache, k, v)
        a = attention(q, k, v, self.impl, True, self.p, self.training, False)
        return self.proj(a.transpose(1, 2).contiguous().view(b, s, h))


class GPT2(nn.Module):
    def __init__(self, c: dict[str, Any], impl: str) -> None:
        super().__init__()
        self.wte, self.wpe = (
            nn.Embedding(c["vocab_size"], c["n_embd"]),
            nn.Embedding(c["n_positions"], c["n_embd"]),
        )
        self.drop = nn.Dropout(c["resid_pdrop"])
        self.layers = nn.ModuleList(GPT2Layer(c, impl) for _ in range(c["n_layer"]))
        self.ln = nn.LayerNorm(c["n_embd"])

    def forward(
        self,
        ids: torch.Tensor,
        caches: list[list[Any]] | None = None,
        start: int = 0,
        last_only: bool = False,
    ) -> torch.Tensor:
        # GPT2Model keeps both embedding outputs as locals until it returns (before the head)
        inputs_embeds = self.wte(ids)
        position_embeds = self.wpe(torch.arange(start, start + ids.shape[1]))
        x = self.drop(inputs_embeds + position_embeds)
        for i, layer in enumerate(self.layers):
            x = layer(x, caches[i] if caches is not None else None)
        del inputs_embeds, position_embeds
        x = self.ln(x)
        return F.linear(x[:, -1:] if last_only else x, self.wte.weight)


class BertLayer(nn.Module):
    def __init__(self, c: dict[str, Any], impl: str) -> None:
        super().__init__()
        h = c["hidden_size"]
        self.nh, self.impl = c["num_attention_heads"], impl
        self.q, self.k, self.v, self.o = (nn.Linear(h, h) for _ in range(4))
        self.ln1, self.ln2 = nn.LayerNorm(h), nn.LayerNorm(h)
        self.fc, self.out = (
            nn.Linear(h, c["intermediate_size"]),
            nn.Linear(c["intermediate_size"], h),
        )
        self.drop = nn.Dropout(0.1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.ln1(x + self.drop(self.attention(x)))
        return self.ln2(x + self.drop(self.out(F.gelu(self.fc(x)))))

    def attention(self, x: torch.Tensor) -> torch.Tensor:
        b, s, h = x.shape
        q, k, v = (
            m(x).view(b, s, self.nh, h // self.nh).transpose(1, 2) for m in (self.q, self.k, self.v)
        )
        a = attention(q, k, v, self.impl, False, 0.1, self.training, False)
        return self.o(a.transpose(1, 2).contiguous().view(b, s, h))


class Bert(nn.Module):
    def __init__(self, c: dict[str, Any], impl: str) -> None:
        super().__init__()
        h = c["hidden_size"]
        self.word, self.pos = (
            nn.Embedding(c["vocab_size"], h),
            nn.Embedding(c["max_position_embeddings"], h),
        )
        self.tok_type = nn.Embedding(c["type_vocab_size"], h)
        self.ln, self.drop = nn.LayerNorm(h), nn.Dropout(0.1)
        self.layers = nn.ModuleList(BertLayer(c, impl) for _ in range(c["num_hidden_layers"]))
        self.pool = nn.Linear(h, h)

    def forward(
        self, ids: torch.Tensor, caches: Any = None, start: int = 0, last_only: bool = False
    ) -> torch.Tensor:
        s = ids.shape[1]
        x = self.drop(
            self.ln(
                self.word(ids) + self.pos(torch.arange(s)) + self.tok_type(torch.zeros_like(ids))
            )
        )
        for layer in self.layers:
            x = layer(x)
        return torch.tanh(self.pool(x[:, 0]))


def build(name: str, impl: str) -> nn.Module:
    c = CONFIGS[name]
    return {"gpt2": GPT2, "llama": Llama, "bert": Bert}[c["model_type"]](c, impl)


# ------------------------------------------------------------------ workloads and measurement


def run(name: str, impl: str, mode: str, batch: int, seq: int, new: int, steps: int = 2) -> None:
    torch.manual_seed(0)
    c = CONFIGS[name]
    model = build(name, impl)
    vocab = c["vocab_size"]
    ids = torch.randint(0, vocab, (batch, seq))
    encoder = c["model_type"] == "bert"
    if mode in ("train", "lora"):
        if mode == "lora":
            assert isinstance(model, Llama)
            model.lora(8)
        model.train()
        opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-4)
        for _ in range(steps):
            out = model(ids)
            loss = (
                out.float().pow(2).mean()
                if encoder
                else F.cross_entropy(out.float().view(-1, vocab), ids.view(-1))
            )
            loss.backward()  # the plain loop: `out` and `loss` live through the step
            opt.step()
            opt.zero_grad(set_to_none=True)
        return
    model.eval()
    with torch.no_grad():
        if mode in ("inference", "eval"):
            out = model(ids)
            if mode == "eval" and not encoder:
                # transformers' ForCausalLMLoss: fp32 logits, labels shifted by pad + slice
                padded = F.pad(ids, (0, 1), value=-100)
                shifted = padded[..., 1:].contiguous()
                F.cross_entropy(out.float().view(-1, vocab), shifted.view(-1))
                del padded, shifted
            return
        caches: list[list[Any]] = [
            [] for _ in range(c.get("num_hidden_layers", c.get("n_layer", 0)))
        ]
        logits = model(ids, caches, 0, last_only=True)[:, -1].float()
        for t in range(new):
            nxt = logits.argmax(-1, keepdim=True)
            logits = model(nxt, caches, seq + t, last_only=True)[:, -1].float()


def estimate(name: str, impl: str, mode: str, batch: int, seq: int, new: int) -> tuple[int, str]:
    m = gputui_model(name)
    wl = Workload(
        mode="train" if mode == "lora" else mode,  # type: ignore[arg-type]
        batch_size=batch, seq_len=seq, new_tokens=new, attention=impl,  # type: ignore[arg-type]
        method="lora" if mode == "lora" else "full", precision="fp32", weights="fp32",
        lora_rank=8, backend="cpu", kv_dtype="fp32",  # the models cache in their own dtype
    )  # fmt: skip
    phase, b = memory(m, wl).breakdown(batch, seq)
    return b.total, phase


def kv_checks() -> list[str]:
    lines = []
    raw = json.loads((ROOT / "examples/llm/llama-3-8b.json").read_text())
    cfg = from_hf_dict(raw)
    got = kv_cache_bytes(cfg, 2048, 1, "fp16")
    lines.append(f"Llama-3-8B n_ctx 2048 f16: {got / 2**20:.2f} MiB (llama.cpp log: 256.00 MiB)")
    # the benchmark's own caches, measured: K and V of every layer after prefill + decode
    for name in ("llama-gqa-mini", "gpt2-mini"):
        c = CONFIGS[name]
        model = build(name, "sdpa").eval()
        layers = c.get("num_hidden_layers", c.get("n_layer"))
        caches: list[list[Any]] = [[] for _ in range(layers)]
        with torch.no_grad():
            model(torch.randint(0, 100, (2, 100)), caches, 0, last_only=True)
            for t in range(7):
                model(torch.randint(0, 100, (2, 1)), caches, 100 + t, last_only=True)
        measured = sum(t.numel() * t.element_size() for pair in caches for t in pair)
        est = kv_cache_bytes(gputui_model(name).config, 107, 2, "fp32")
        lines.append(f"{name}: cache of 2 x 107 tokens measured {measured:,} B, formula {est:,} B")
    return lines


# Published GPU figures: transformers PR #28802 (SDPA for BERT), training benchmark gist
# (gist.github.com/hackyon/2bfcfb59666fab23655f6e62bc0752ba, PyTorch 2.2): bert-base-uncased,
# forward + backward of logits.sum() without an optimizer; (batch, seq): (eager MB, sdpa MB).
PUBLISHED_BERT_TRAIN = {
    (4, 256): (939.213, 782.791),
    (4, 512): (1970.447, 1263.469),
    (8, 256): (1594.295, 1263.993),
    (8, 512): (3629.401, 2209.760),
}


def published_checks() -> list[str]:
    """Eager minus sdpa peak, estimated vs published: what the attention kernels keep differently.

    The gist does not state its dtype or head, so absolute peaks are not comparable; the
    difference between its two columns is the probabilities eager attention keeps, which
    the estimate models (fp16: softmax output, dropout output and mask per head and pair).
    """
    raw = json.loads((ROOT / "examples/llm/bert-base-uncased.json").read_text())
    m = from_config(from_hf_dict(raw), "bert-base-uncased", "published")
    lines = []
    for (batch, seq), (eager, sdpa) in PUBLISHED_BERT_TRAIN.items():
        wl = Workload(
            mode="train", batch_size=batch, seq_len=seq, precision="fp16", optimizer="sgd"
        )
        e = memory(m, replace(wl, attention="eager")).peak(batch, seq)
        s = memory(m, wl).peak(batch, seq)
        est, pub = (e - s) / 1e6, eager - sdpa
        lines.append(
            f"bert-base-uncased train b{batch} s{seq}: eager - sdpa estimated {est:,.0f} MB, "
            f"published {pub:,.0f} MB ({(est - pub) / pub * 100:+.1f} %)"
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--markdown", action="store_true", help="print the markdown table for llm_accuracy.md"
    )
    ap.add_argument("--quick", action="store_true", help="one batch and sequence per case")
    ap.add_argument(
        "--mode",
        action="append",
        choices=["train", "lora", "inference", "eval", "generate"],
        help="only these workloads (repeatable; default all)",
    )
    args = ap.parse_args(argv)
    torch.set_num_threads(2)
    cases = []
    shapes = [(1, 128), (4, 512)] if args.quick else [(1, 128), (4, 128), (1, 512), (4, 512)]
    for name in CONFIGS:
        # the encoder has no LM head: its eval loss is on a pooled vector, the same peak
        modes = (
            ["train", "inference"]
            if name == "bert-mini"
            else ["train", "inference", "eval", "generate"]
        )
        if name == "llama-gqa-mini":
            modes.insert(1, "lora")
        for mode in modes:
            if args.mode and mode not in args.mode:
                continue
            for impl in ("sdpa", "eager"):
                for batch, seq in shapes:
                    cases.append((name, impl, mode, batch, seq, 8 if mode == "generate" else 0))
    rows = []
    worst_under, worst_abs = 0.0, 0.0
    for name, impl, mode, batch, seq, new in cases:
        t0 = time.perf_counter()
        measured = peak_cpu_bytes(lambda: run(name, impl, mode, batch, seq, new))  # noqa: B023
        est, phase = estimate(name, impl, mode, batch, seq, new)
        err = (est - measured) / measured * 100
        worst_abs = max(worst_abs, abs(err))
        worst_under = min(worst_under, err)
        rows.append((name, mode, impl, batch, seq, est, measured, err, phase))
        print(
            f"{name:<15} {mode:<9} {impl:<5} b{batch:<2} s{seq:<4} est {est / 2**20:8.2f} MiB  "
            f"measured {measured / 2**20:8.2f} MiB  {err:+6.1f} %  ({phase}; {time.perf_counter() - t0:.1f} s)",
            file=sys.stderr,
            flush=True,
        )
    for line in kv_checks() + published_checks():
        print(line, file=sys.stderr)
    print(f"worst error {worst_abs:.1f} %, most under {worst_under:+.1f} %", file=sys.stderr)
    if args.markdown:
        print(
            "| model | workload | attention | batch | seq | estimate MiB | measured MiB | error | estimated peak at |"
        )
        print("|---|---|---|---:|---:|---:|---:|---:|---|")
        for name, mode, impl, batch, seq, est, measured, err, phase in rows:
            print(
                f"| {name} | {mode} | {impl} | {batch} | {seq} | {est / 2**20:.2f} | {measured / 2**20:.2f} | {err:+.1f} % | {phase} |"
            )
        print()
        for line in kv_checks() + published_checks():
            print(f"- {line}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
