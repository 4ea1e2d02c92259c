"""A transformers model's no-grad forward on CPU, without labels and with, against gputui.

`--mode inference` is `model(ids, use_cache=False)` under torch.no_grad (serving, batch
scoring: the logits in the model's dtype); `--mode eval` is `model(ids, labels=ids,
use_cache=False)` (the loss on top). The model is built from an examples/llm config
with random weights before the measured window (construction allocates and frees an
untied head), so the figure is its parameters and buffers plus the forward's peak
(benchmarks/torch_memory.py, the CPU profiler's allocator total), compared with the
`cpu`-backend estimate in fp32.

Needs torch and transformers:  pip install torch==2.13.0 transformers
Run:  python benchmarks/hf_forward_memory.py [CONFIG.json:BATCH:SEQ ...] [--attention eager]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch
import transformers

from gputui.fit.importers.hfkeys import from_hf_dict
from gputui.fit.transformer.estimate import memory
from gputui.fit.transformer.model import from_config
from gputui.fit.transformer.workload import Workload

sys.path.insert(0, str(Path(__file__).resolve().parent))
from torch_memory import peak_cpu_bytes  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT = ("gpt2.json:4:512", "pythia-410m.json:2:256", "qwen2.5-0.5b.json:2:256",
           "llama-3.2-1b.json:1:512")  # fmt: skip


def measured(raw: dict[str, object], batch: int, seq: int, attention: str) -> dict[str, int]:
    cfg = transformers.AutoConfig.for_model(**raw)
    cfg._attn_implementation = attention
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(cfg, dtype=torch.float32).eval()
    held = {
        t.data_ptr(): t.untyped_storage().nbytes() for t in (*model.parameters(), *model.buffers())
    }
    ids = torch.randint(0, int(cfg.vocab_size), (batch, seq))

    def run(labels: bool) -> None:
        with torch.no_grad():
            out = model(ids, labels=ids if labels else None, use_cache=False)
        del out

    base = sum(held.values())
    return {m: base + peak_cpu_bytes(lambda m=m: run(m == "eval")) for m in ("inference", "eval")}  # type: ignore[misc]


def estimated(
    raw: dict[str, object], name: str, batch: int, seq: int, attention: str
) -> dict[str, int]:
    model = from_config(from_hf_dict(raw), name, "benchmark")
    out = {}
    for mode in ("inference", "eval"):
        wl = Workload(mode=mode, batch_size=batch, seq_len=seq, precision="fp32",  # type: ignore[arg-type]
                      weights="fp32", backend="cpu", attention=attention)  # type: ignore[arg-type]  # fmt: skip
        out[mode] = int(memory(model, wl).breakdown(batch, seq)[1].total)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "cases", nargs="*", default=list(DEFAULT), help="CONFIG.json:BATCH:SEQ (examples/llm)"
    )
    ap.add_argument("--attention", choices=["sdpa", "eager"], default="sdpa")
    args = ap.parse_args(argv)
    torch.set_num_threads(2)
    print("| model | batch | seq | mode | estimate MiB | measured MiB | error |")
    print("|---|---:|---:|---|---:|---:|---:|")
    for case in args.cases:
        file, batch, seq = case.split(":")
        raw = json.loads((ROOT / "examples" / "llm" / file).read_text())
        b, s = int(batch), int(seq)
        meas = measured(raw, b, s, args.attention)
        est = estimated(raw, file, b, s, args.attention)
        for mode in ("inference", "eval"):
            err = (est[mode] - meas[mode]) / meas[mode] * 100
            print(f"| {file.removesuffix('.json')} | {b} | {s} | {mode} | {est[mode] / 2**20:,.2f} | "
                  f"{meas[mode] / 2**20:,.2f} | {err:+.1f} % |", flush=True)  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
