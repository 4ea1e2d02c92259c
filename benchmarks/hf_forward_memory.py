"""A transformers model's no-grad forward on CPU, without labels and with, against gputui.

`--mode inference` is `model(ids, use_cache=False)` under torch.no_grad (serving, batch
scoring: the logits in the model's dtype); `--mode eval` is `model(ids, labels=ids,
use_cache=False)` (the loss on top). The model is built from an examples/llm config
with random weights before the measured window (construction allocates and frees an
untied head), so the figure is its parameters and buffers plus the forward's peak
(benchmarks/torch_memory.py, the CPU profiler's allocator total), compared with the
`cpu`-backend estimate in fp32.

An encoder (ModernBERT, BERT) runs `--mode inference` only, as its `architectures` class
(a masked LM: the logits over the vocabulary) or the bare model.
A case is CONFIG.json:BATCH:SEQ[@KEY=VALUE,...] (a path, or a file of examples/llm; the
overrides replace config keys, JSON values); `--csv FILE` appends each row to an accuracy
corpus data file (scripts/accuracy_corpus.py).

Needs torch and transformers:  pip install torch==2.13.0 transformers
Run:  python benchmarks/hf_forward_memory.py [CASE ...] [--attention eager] [--csv FILE]
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
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
DEFAULT = ("gpt2.json:4:512", "pythia-410m.json:2:256", "qwen2.5-0.5b.json:2:256",
           "llama-3.2-1b.json:1:512")  # fmt: skip


def modes(raw: dict[str, Any]) -> tuple[str, ...]:
    return ("inference",) if from_hf_dict(raw).encoder else ("inference", "eval")


def build(raw: dict[str, Any], attention: str) -> Any:
    """The model as its config's class would load it, random weights, fp32."""
    cfg = transformers.AutoConfig.for_model(**raw)
    cfg._attn_implementation = attention
    torch.manual_seed(0)
    if not from_hf_dict(raw).encoder:
        return transformers.AutoModelForCausalLM.from_config(cfg, dtype=torch.float32).eval()
    arch = (raw.get("architectures") or [""])[0]
    auto = transformers.AutoModelForMaskedLM if "MaskedLM" in arch else transformers.AutoModel
    return auto.from_config(cfg, dtype=torch.float32).eval()


def measured(raw: dict[str, Any], batch: int, seq: int, attention: str) -> dict[str, int]:
    model = build(raw, attention)
    cfg = model.config
    held = {
        t.data_ptr(): t.untyped_storage().nbytes() for t in (*model.parameters(), *model.buffers())
    }
    ids = torch.randint(0, int(cfg.vocab_size), (batch, seq))

    extra = {} if from_hf_dict(raw).encoder else {"use_cache": False}

    def run(labels: bool) -> None:
        with torch.no_grad():
            out = model(ids, labels=ids if labels else None, **extra)
        del out

    base = sum(held.values())
    return {m: base + peak_cpu_bytes(lambda m=m: run(m == "eval")) for m in modes(raw)}  # type: ignore[misc]


def estimated(
    raw: dict[str, Any], name: str, batch: int, seq: int, attention: str
) -> dict[str, int]:
    model = from_config(from_hf_dict(raw), name, "benchmark")
    out = {}
    for mode in modes(raw):
        wl = Workload(mode=mode, batch_size=batch, seq_len=seq, precision="fp32",  # type: ignore[arg-type]
                      weights="fp32", backend="cpu", attention=attention)  # type: ignore[arg-type]  # fmt: skip
        out[mode] = int(memory(model, wl).breakdown(batch, seq)[1].total)
    return out


def parse_case(case: str) -> tuple[str, dict[str, Any], int, int]:
    spec, _, over = case.partition("@")
    file, batch, seq = spec.rsplit(":", 2)
    path = Path(file) if Path(file).is_file() else ROOT / "examples" / "llm" / file
    raw = json.loads(path.read_text())
    for item in filter(None, over.split(",")):
        key, _, value = item.partition("=")
        raw[key] = json.loads(value)
    name = Path(file).stem + (f"@{over}" if over else "")
    return name, raw, int(batch), int(seq)


def corpus_row(
    path: Path, raw: dict[str, Any], name: str, mode: str, setting: str, meas: int, est: int,
    source: str,
) -> None:  # fmt: skip
    """One row of an accuracy corpus data file (benchmarks/measured/, accuracy_corpus.py)."""
    cfg = from_hf_dict(raw)
    runtime = f"transformers {transformers.__version__}, pytorch {torch.__version__}"
    row = ["transformer", cfg.family, name, mode,
           runtime, setting, f"{meas / 2**20:.2f}", f"{est / 2**20:.2f}", source]  # fmt: skip
    with path.open("a", newline="") as f:
        csv.writer(f, lineterminator="\n").writerow(row)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "cases", nargs="*", default=list(DEFAULT), help="CONFIG.json:BATCH:SEQ (examples/llm)"
    )
    ap.add_argument("--attention", choices=["sdpa", "eager"], default="sdpa")
    ap.add_argument("--csv", type=Path, help="append the rows to this corpus data file")
    args = ap.parse_args(argv)
    torch.set_num_threads(2)
    print("| model | batch | seq | mode | estimate MiB | measured MiB | error |")
    print("|---|---:|---:|---|---:|---:|---:|")
    for case in args.cases:
        name, raw, b, s = parse_case(case)
        meas = measured(raw, b, s, args.attention)
        est = estimated(raw, name, b, s, args.attention)
        for mode in modes(raw):
            err = (est[mode] - meas[mode]) / meas[mode] * 100
            print(f"| {name} | {b} | {s} | {mode} | {est[mode] / 2**20:,.2f} | "
                  f"{meas[mode] / 2**20:,.2f} | {err:+.1f} % |", flush=True)  # fmt: skip
            if args.csv:
                corpus_row(args.csv, raw, name, mode, f"batch {b}, seq {s}, fp32, {args.attention}",
                           meas[mode], est[mode], "hf_forward_memory.py")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
