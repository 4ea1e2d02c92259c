"""Time one LLM config estimated on every catalog card, longest-context search and card counts included.

The issue's target is "well under 0.5 s". Printed side by side with a baseline in
the same run: the plain memory evaluation of one card (what every search repeats).

Run:  .venv/bin/python benchmarks/llm_speed.py [examples/llm/llama-3-8b.json] [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from gputui.catalog import load_catalog
from gputui.fit import FitRequest, TransformerSpec, check
from gputui.fit.core.target import card_target
from gputui.fit.importers.hfkeys import from_hf_dict
from gputui.fit.transformer.estimate import estimate, memory
from gputui.fit.transformer.model import from_config
from gputui.fit.transformer.workload import Workload

ROOT = Path(__file__).resolve().parent.parent


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("config", nargs="?", default=str(ROOT / "examples/llm/llama-3-8b.json"))
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args(argv)
    catalog = load_catalog()
    path = Path(args.config)
    model = from_config(from_hf_dict(json.loads(path.read_text())), path.stem, str(path))
    workloads = {
        "generate 32k": Workload(mode="generate", seq_len=32768),
        "train LoRA 2k": Workload(mode="train", method="lora", seq_len=2048),
        "train full 2k": Workload(mode="train", seq_len=2048),
    }
    card = catalog.find("RTX 4090")
    print(f"{model.name}, {len(catalog.cards)} catalog cards, best of {args.repeat}")
    for label, wl in workloads.items():
        best_rank = best_one = best_peak = float("inf")
        for _ in range(args.repeat):
            t = time.perf_counter()
            memory(model, wl).peak(1, wl.seq_len)
            best_peak = min(best_peak, time.perf_counter() - t)
            t = time.perf_counter()
            estimate(model, wl, card_target(card, dict(catalog.architectures)))
            best_one = min(best_one, time.perf_counter() - t)
            t = time.perf_counter()
            check(FitRequest(TransformerSpec(model.name, model, wl), catalog=catalog))
            best_rank = min(best_rank, time.perf_counter() - t)
        print(
            f"  {label:<14} all cards (max batch, longest context, min card count): {best_rank * 1000:7.1f} ms"
            f"   one card: {best_one * 1000:6.2f} ms   baseline, one peak evaluation: {best_peak * 1000:6.3f} ms"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
