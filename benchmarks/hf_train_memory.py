"""A transformers model's training step on CPU, measured, against gputui's estimate.

The model is built from a config (examples/llm, or a JSON file) with random weights
before the measured window, then two AdamW steps run inside it, in either loop
(`--loop`, default both): plain, `out = model(ids, labels=ids)`, `out.loss.backward()`,
`opt.step()`, `opt.zero_grad(set_to_none=True)` with `out` alive until the next forward
replaces it; trainer, `loss = model(...).loss` (the HF Trainer keeps only the loss).
The figure is the parameters plus the steps' peak (benchmarks/torch_memory.py, the
CPU profiler's allocator total), compared with the `cpu`-backend estimate in fp32.

`--saved` also lists, per module type of one layer, the bytes autograd saves for the
backward pass (torch.autograd.graph.saved_tensors_hooks; each storage counted once,
where it was first saved), the measurement behind activations.py's per-layer walk.

Needs torch and transformers:  pip install torch==2.13.0 transformers
Run:  python benchmarks/hf_train_memory.py [CONFIG.json:BATCH:SEQ ...] [--attention eager]
          [--set attn_pdrop=0.0] [--saved] [--loop plain|trainer]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import torch
import transformers

from gputui.fit.importers.hfkeys import from_hf_dict
from gputui.fit.transformer.estimate import memory
from gputui.fit.transformer.model import from_config
from gputui.fit.transformer.workload import Workload

sys.path.insert(0, str(Path(__file__).resolve().parent))
from torch_memory import peak_cpu_bytes  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT = ("gpt2.json:4:512",)


def build(raw: dict[str, Any], attention: str) -> Any:
    cfg = transformers.AutoConfig.for_model(**raw)
    cfg._attn_implementation = attention
    torch.manual_seed(0)
    return transformers.AutoModelForCausalLM.from_config(cfg, dtype=torch.float32).train()


def measured(
    raw: dict[str, Any], batch: int, seq: int, attention: str, loop: str = "plain", steps: int = 2
) -> int:
    model = build(raw, attention)
    held = {
        t.data_ptr(): t.untyped_storage().nbytes() for t in (*model.parameters(), *model.buffers())
    }
    ids = torch.randint(0, int(raw.get("vocab_size", 50257)), (batch, seq))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)

    def plain() -> None:
        # the loop of PyTorch's and HF's own examples: `out` lives until the next forward
        # replaces it, so its logits are there through the backward and the step
        for _ in range(steps):
            out = model(ids, labels=ids, use_cache=False)
            out.loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)

    def trainer() -> None:
        # the HF Trainer's compute_loss returns only the loss: the outputs die with it
        for _ in range(steps):
            loss = model(ids, labels=ids, use_cache=False).loss
            loss.backward()
            del loss
            opt.step()
            opt.zero_grad(set_to_none=True)

    run = plain if loop == "plain" else trainer

    return sum(held.values()) + peak_cpu_bytes(run)


def saved_by_module(raw: dict[str, Any], batch: int, seq: int, attention: str) -> dict[str, int]:
    """Bytes autograd saves in the forward, by the innermost module type that saved them."""
    model = build(raw, attention)
    ids = torch.randint(0, int(raw.get("vocab_size", 50257)), (batch, seq))
    stack: list[str] = []
    hooks = []
    for name, mod in model.named_modules():
        # modules inside a repeated layer ("...layers.3.mlp"): one label for all layers
        label = ("layer " if re.search(r"\.\d+(\.|$)", name) else "") + type(mod).__name__

        def pre(_m: Any, _a: Any, label: str = label) -> None:
            stack.append(label)

        def post(_m: Any, _a: Any, _o: Any) -> None:
            stack.pop()

        hooks.append(mod.register_forward_pre_hook(pre))
        hooks.append(mod.register_forward_hook(post))
    seen: set[int] = set()
    by: dict[str, int] = defaultdict(int)
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}

    def pack(t: torch.Tensor) -> torch.Tensor:
        s = t.untyped_storage()
        if s.data_ptr() not in seen and s.data_ptr() not in params:
            seen.add(s.data_ptr())
            by[stack[-1] if stack else "(outside)"] += s.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = model(ids, labels=ids, use_cache=False)
    del out
    for h in hooks:
        h.remove()
    return dict(by)


def estimated(
    raw: dict[str, Any], name: str, batch: int, seq: int, attention: str, loop: str = "plain"
) -> tuple[int, str]:
    model = from_config(from_hf_dict(raw), name, "benchmark")
    wl = Workload(mode="train", batch_size=batch, seq_len=seq, precision="fp32",
                  weights="fp32", backend="cpu", attention=attention,  # type: ignore[arg-type]
                  loop=loop)  # type: ignore[arg-type]  # fmt: skip
    phase, b = memory(model, wl).breakdown(batch, seq)
    return int(b.total), phase


def _load(file: str) -> dict[str, Any]:
    path = Path(file) if Path(file).exists() else ROOT / "examples" / "llm" / file
    raw: dict[str, Any] = json.loads(path.read_text())
    return raw


def _value(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("cases", nargs="*", default=list(DEFAULT), help="CONFIG.json:BATCH:SEQ")
    ap.add_argument("--attention", choices=["sdpa", "eager"], default="sdpa")
    ap.add_argument("--set", action="append", default=[], help="KEY=VALUE over the config")
    ap.add_argument("--saved", action="store_true", help="also list the saved bytes per module")
    ap.add_argument(
        "--loop",
        action="append",
        choices=["plain", "trainer"],
        help="the training loop(s) to measure (repeatable; default both)",
    )
    args = ap.parse_args(argv)
    torch.set_num_threads(2)
    over = {k: _value(v) for k, v in (s.split("=", 1) for s in args.set)}
    loops = args.loop or ["plain", "trainer"]
    print("| model | loop | attention | overrides | batch | seq | estimate MiB | measured MiB | error | estimated peak at |")  # fmt: skip
    print("|---|---|---|---|---:|---:|---:|---:|---:|---|")
    for case in args.cases:
        file, batch, seq = case.rsplit(":", 2)
        raw = {**_load(file), **over}
        b, s = int(batch), int(seq)
        if args.saved:
            layers = from_hf_dict(raw).num_layers
            for mod, n in sorted(saved_by_module(raw, b, s, args.attention).items()):
                per = n / (b * s) / (layers if mod.startswith("layer ") else 1)
                what = "B/token per layer" if mod.startswith("layer ") else "B/token"
                print(f"  saved by {mod:<34} {per:>12,.0f} {what}", file=sys.stderr)
        for loop in loops:
            meas = measured(raw, b, s, args.attention, loop)
            est, phase = estimated(raw, file, b, s, args.attention, loop)
            err = (est - meas) / meas * 100
            sets = ", ".join(args.set) or "-"
            print(f"| {Path(file).stem} | {loop} | {args.attention} | {sets} | {b} | {s} | "
                  f"{est / 2**20:,.2f} | {meas / 2**20:,.2f} | {err:+.1f} % | {phase} |",
                  flush=True)  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
