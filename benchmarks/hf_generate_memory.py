"""transformers' generate() on CPU against gputui's `--mode generate`, and what its cache holds.

For each CONFIG.json:BATCH:PROMPT:NEW (examples/llm; `@KEY=VALUE,...` overrides keys, e.g.
a smaller `num_hidden_layers` so a 4B config fits a small machine) the model is built
with random weights in fp32, then, measured by the CPU profiler's allocator total
(benchmarks/torch_memory.py):
  * prefill: `model(ids, use_cache=True, logits_to_keep=1)` under no_grad (the forward
    generate runs first, returning the last position's logits);
  * generate: `model.generate(ids, max_new_tokens=NEW, do_sample=False)` (greedy; EOS
    disabled so every sequence runs NEW steps).
Each figure is the parameters plus the peak, compared with the `cpu`-backend estimate
(fp32 weights, fp32 cache). After each run the cache is inspected layer by layer: its
class, the tokens it shows (`keys.shape[-2]`) and the bytes its K and V storage owns
(`untyped_storage().nbytes()`), against gputui's `kv_cache` figure for that moment.

An encoder-decoder (T5) is built as AutoModelForSeq2SeqLM and measured in generate only
(the prompt is the encoder's input); its cache columns are left empty.
CONFIG may be a path as well as a file of examples/llm; `--csv FILE` appends each
generate row to an accuracy corpus data file (scripts/accuracy_corpus.py).

Needs torch and transformers:  pip install torch==2.13.0 transformers
Run:  python benchmarks/hf_generate_memory.py [CASE ...] [--attention eager] [--csv FILE]
"""

from __future__ import annotations

import argparse
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
from hf_forward_memory import corpus_row  # noqa: E402
from torch_memory import peak_cpu_bytes  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT = (
    "gpt2.json:4:512:32",
    "pythia-410m.json:2:256:16",
    "phi-3-mini-4k.json:2:256:16@num_hidden_layers=4",
    "gemma-3-1b.json:2:256:16@num_hidden_layers=6,sliding_window=128",
)


def parse_case(case: str) -> tuple[str, dict[str, Any], int, int, int]:
    spec, _, over = case.partition("@")
    file, batch, prompt, new = spec.rsplit(":", 3)
    path = Path(file) if Path(file).is_file() else ROOT / "examples" / "llm" / file
    raw = json.loads(path.read_text())
    for item in filter(None, over.split(",")):
        key, _, value = item.partition("=")
        raw[key] = json.loads(value)
    if isinstance(raw.get("layer_types"), list) and "num_hidden_layers" in raw:
        raw["layer_types"] = raw["layer_types"][: raw["num_hidden_layers"]]
    return (
        Path(file).stem + (f"@{over}" if over else ""),
        raw,
        int(batch),
        int(prompt),
        int(new),
    )


def cache_facts(cache: Any) -> dict[str, Any]:
    layers = [layer for layer in cache.layers if getattr(layer, "keys", None) is not None]
    shown = sum(2 * x.keys.numel() * x.keys.element_size() for x in layers)
    owned = sum(
        x.keys.untyped_storage().nbytes() + x.values.untyped_storage().nbytes() for x in layers
    )
    return {
        "classes": sorted({type(x).__name__ for x in cache.layers}),
        "tokens": sorted({int(x.keys.shape[-2]) for x in layers}),
        "storage_tokens": sorted(
            {
                x.keys.untyped_storage().nbytes()
                // max(1, x.keys[:, :, :1].numel() * x.keys.element_size())
                for x in layers
            }
        ),
        "shown": shown,
        "owned": owned,
    }


def measured(
    raw: dict[str, Any], batch: int, prompt: int, new: int, attention: str
) -> dict[str, Any]:
    cfg = transformers.AutoConfig.for_model(**raw)
    cfg._attn_implementation = attention
    torch.manual_seed(0)
    encdec = from_hf_dict(raw).encdec is not None
    auto = transformers.AutoModelForSeq2SeqLM if encdec else transformers.AutoModelForCausalLM
    model = auto.from_config(cfg, dtype=torch.float32).eval()
    model.generation_config.eos_token_id = None
    model.generation_config.pad_token_id = 0
    if encdec:
        model.generation_config.decoder_start_token_id = 0  # T5's pad, as its checkpoints set
    held = {
        t.data_ptr(): t.untyped_storage().nbytes() for t in (*model.parameters(), *model.buffers())
    }
    base = sum(held.values())
    ids = torch.randint(0, int(cfg.vocab_size), (batch, prompt))
    mask = torch.ones_like(ids)
    out: dict[str, Any] = {}

    def prefill() -> None:
        with torch.no_grad():
            res = model(ids, attention_mask=mask, use_cache=True, logits_to_keep=1)
        out["prefill_cache"] = cache_facts(res.past_key_values)
        del res

    def generate() -> None:
        with torch.no_grad():
            res = model.generate(
                ids, attention_mask=mask, max_new_tokens=new, do_sample=False,
                return_dict_in_generate=True,
            )  # fmt: skip
        if not encdec:
            out["generate_cache"] = cache_facts(res.past_key_values)
        del res

    if encdec:
        out["generate"] = base + peak_cpu_bytes(generate)
        out["prefill_cache"] = out["generate_cache"] = None
        return out
    out["prefill"] = base + peak_cpu_bytes(prefill)
    out["generate"] = base + peak_cpu_bytes(generate)
    return out


def estimated(
    raw: dict[str, Any], name: str, batch: int, prompt: int, new: int, attention: str
) -> dict[str, Any]:
    model = from_config(from_hf_dict(raw), name, "benchmark")
    wl = Workload(mode="generate", batch_size=batch, seq_len=prompt, new_tokens=new,
                  precision="fp32", weights="fp32", kv_dtype="fp32", backend="cpu",
                  attention=attention)  # type: ignore[arg-type]  # fmt: skip
    mem = memory(model, wl)
    phase, b = mem.breakdown(batch, prompt)
    sm = mem.stages[0]
    by_name = {ph.name: ph for ph in sm.phases}
    first = next((ph for ph in sm.phases if ph.kv == "prompt"), sm.phases[0])
    prefill_kv = sm.parts(first, batch, prompt).kv_cache
    last = by_name.get("decode, cache full", sm.phases[-1])
    decode_kv = sm.parts(last, batch, prompt).kv_cache
    return {"total": b.total, "phase": phase, "kv": b.kv_cache, "acts": b.activations,
            "prefill_kv": prefill_kv, "decode_kv": decode_kv}  # fmt: skip


def mib(n: float) -> str:
    return f"{n / 2**20:,.2f}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("cases", nargs="*", default=list(DEFAULT),
                    help="CONFIG.json:BATCH:PROMPT:NEW[@KEY=VALUE,...] (examples/llm)")  # fmt: skip
    ap.add_argument("--attention", choices=["sdpa", "eager"], default="sdpa")
    ap.add_argument("--csv", type=Path, help="append the rows to this corpus data file")
    args = ap.parse_args(argv)
    torch.set_num_threads(2)
    print("| model | batch | prompt + new | generate est / measured MiB | error | est. peak at "
          "| cache after prefill: est / owned MiB (tokens shown, stored) "
          "| after generate: est / owned MiB (tokens shown, stored) | class |")  # fmt: skip
    print("|---|---:|---:|---:|---:|---|---:|---:|---|")
    for case in args.cases:
        name, raw, b, p, n = parse_case(case)
        meas = measured(raw, b, p, n, args.attention)
        est = estimated(raw, name, b, p, n, args.attention)
        err = (est["total"] - meas["generate"]) / meas["generate"] * 100
        if args.csv:
            corpus_row(args.csv, raw, name, "generate",
                       f"batch {b}, prompt {p} + {n}, fp32, {args.attention}",
                       meas["generate"], est["total"], "hf_generate_memory.py")  # fmt: skip
        pc, gc = meas["prefill_cache"], meas["generate_cache"]
        if pc is None:
            print(f"| {name} | {b} | {p} + {n} | {mib(est['total'])} / {mib(meas['generate'])} | "
                  f"{err:+.1f} % | {est['phase']} | | | |", flush=True)  # fmt: skip
            continue
        print(f"| {name} | {b} | {p} + {n} | {mib(est['total'])} / {mib(meas['generate'])} | "
              f"{err:+.1f} % | {est['phase']} | {mib(est['prefill_kv'])} / {mib(pc['owned'])} "
              f"({pc['tokens']}, {pc['storage_tokens']}) | {mib(est['decode_kv'])} / "
              f"{mib(gc['owned'])} ({gc['tokens']}, {gc['storage_tokens']}) | "
              f"{', '.join(gc['classes'])} |", flush=True)  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
