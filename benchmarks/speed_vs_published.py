"""gputui's roofline speed estimate against published single-GPU throughputs.

For every row of benchmarks/published/*.csv, the same model, batch, precision and
card through gputui.fit.core.roofline; per workload (and precision) the Spearman rank
correlation across GPUs and the ratio estimate / measured per point. Aims (issue 14):
Spearman >= 0.9 per workload, 80 % of points within a factor of 1.5.

    python benchmarks/speed_vs_published.py            # the summary and every point
    python benchmarks/speed_vs_published.py --md FILE  # also write the markdown table

Models: ResNet-50 is Keras' ResNet50 (tests/fixtures/keras/resnet50.json, v1: the
stride-2 on the first 1x1 of a stage, where NVIDIA's v1.5 strides the 3x3; about 5 %
fewer FLOPs), trained with SGD momentum as in NVIDIA's scripts. BERT-base/large SQuAD
is written below in the models-file syntax (sequence 384, the layers of a BERT
encoder: embedding, 12/24 x [attention, add, norm, GELU FFN, add, norm], QA head;
Adam as run_squad's BertAdam). Llama 3 8B is read by the LLM importer from
examples/llm/llama-3-8b.json and timed by fit.transformer.step_ops.generate_timing with the GGUF sizes
the source reports. The baseline column is what gputui estimated before the roofline
(FLOPs at 40 % of peak; for LLMs fit.llm's own speed before it moved onto the
roofline, kept below as `old_llm_speed`).
"""

from __future__ import annotations

import argparse
import csv
import math
import statistics
import sys
from collections import defaultdict
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from gputui.catalog import load_catalog
from gputui.catalog.models import Architecture, Card
from gputui.fit.core.peak_rate import rate
from gputui.fit.core.precision import has_tensor
from gputui.fit.core.software import DEFAULT_SOFTWARE, MemoryFormat, OptimizerImpl, Software
from gputui.fit.graph import step_ops as graph_speed
from gputui.fit.importers.hf import load_path
from gputui.fit.importers.modelsfile import ModelSpec, load_keras_model, parse_models
from gputui.fit.transformer import step_ops as transformer_speed
from gputui.fit.transformer.model import TransformerModel
from gputui.fit.transformer.step_extras import step_extras
from gputui.fit.transformer.workload import Workload
from gputui.fit.transformer.workload_speed import gemm_shapes

ROOT = Path(__file__).resolve().parents[1]
PUBLISHED = ROOT / "benchmarks" / "published"
RESNET50 = ROOT / "tests" / "fixtures" / "keras" / "resnet50.json"

# Llama 3 8B through the LLM importer (examples/llm/llama-3-8b.json, Meta's config):
# 32 layers, 32 query heads and 8 KV heads of 128, 8,030,261,248 parameters. GGUF
# sizes from the source's "Total VRAM Requirements" table (llama-bench prints GiB).
LLAMA3_CONFIG = ROOT / "examples" / "llm" / "llama-3-8b.json"


def llama_shape() -> tuple[TransformerModel, dict[str, Any]]:
    model = load_path(LLAMA3_CONFIG)
    cfg = model.config
    return model, {
        "params": model.params,
        "n_layers": cfg.num_layers,
        "kv_bytes_per_token": 2 * cfg.num_layers * cfg.kv_dim * 2,  # K and V, fp16 cache
        "attention_flops_per_token_pair": 4 * cfg.num_layers * cfg.q_dim,
        "gemm_shapes": gemm_shapes(model),
    }


LLAMA_MODEL, LLAMA3_8B = llama_shape()
GGUF_BYTES = {"Q4_K_M": int(4.58 * 2**30), "F16": int(14.96 * 2**30)}
# llama.cpp (May 2024) multiplies batches > 32 tokens by dequantizing the weights to
# fp16 and calling cuBLAS with FP16 compute: 2 bytes written and read back per
# parameter for a quantized model, nothing for an F16 one.
DEQUANT_BYTES = {"Q4_K_M": 4.0, "F16": 0.0}


def bert_toml(name: str, layers: int, width: int, heads: int, batch: int) -> str:
    rows = [
        f'{{ name = "tok", type = "Embedding", input_dim = 30522, output_dim = {width}, '
        'inputs = ["ids"] }',
        '{ name = "emb_ln", type = "LayerNormalization", inputs = ["tok"] }',
        '{ name = "emb_drop", type = "Dropout", rate = 0.1, inputs = ["emb_ln"] }',
    ]
    prev = "emb_drop"
    for i in range(layers):
        rows += [
            f'{{ name = "a{i}", type = "MultiHeadAttention", num_heads = {heads}, '
            f'key_dim = {width // heads}, dropout = 0.1, inputs = ["{prev}", "{prev}"] }}',
            f'{{ name = "ad{i}", type = "Dropout", rate = 0.1, inputs = ["a{i}"] }}',
            f'{{ name = "r{i}", type = "Add", inputs = ["{prev}", "ad{i}"] }}',
            f'{{ name = "n{i}", type = "LayerNormalization", inputs = ["r{i}"] }}',
            f'{{ name = "f{i}", type = "Dense", units = {4 * width}, activation = "gelu", '
            f'inputs = ["n{i}"] }}',
            f'{{ name = "g{i}", type = "Dense", units = {width}, inputs = ["f{i}"] }}',
            f'{{ name = "gd{i}", type = "Dropout", rate = 0.1, inputs = ["g{i}"] }}',
            f'{{ name = "s{i}", type = "Add", inputs = ["n{i}", "gd{i}"] }}',
            f'{{ name = "m{i}", type = "LayerNormalization", inputs = ["s{i}"] }}',
        ]
        prev = f"m{i}"
    rows.append(f'{{ name = "qa", type = "Dense", units = 2, inputs = ["{prev}"] }}')
    return (
        f'[[model]]\nname = "{name}"\nkind = "functional"\nbatch_size = {batch}\n'
        'optimizer = "adam"\nmode = "train"\n'
        'inputs = [ { name = "ids", shape = [384], dtype = "int64" } ]\n'
        "layers = [\n  " + ",\n  ".join(rows) + "\n]\n"
    )


@dataclass(frozen=True)
class Point:
    workload: str
    precision: str  # as published
    run_as: str  # the precision gputui runs it in
    batch: int
    gpu: str
    measured: float
    unit: str
    estimate: float | None
    source: str
    suspect: bool = False  # the source's own table contradicts the point (see its notes)
    baseline: float | None = None  # the FLOPs-only estimate the roofline replaced
    held_out: bool = False  # not used while choosing the mechanisms (`held_out`)
    software: str = ""  # the Software the estimate ran with, in short

    @property
    def baseline_ratio(self) -> float | None:
        return self.baseline / self.measured if self.baseline else None

    @property
    def ratio(self) -> float | None:
        return self.estimate / self.measured if self.estimate else None


def software(row: dict[str, str]) -> Software:
    """The layout and optimizer implementation each source documents for its runs.

    - NVIDIA DLE ResNet-50 (PyTorch/Classification/ConvNets/configs.yml, commit 097c7ff9):
      `memory_format: nhwc` for AMP only; TF32/FP32 run main.py's default nchw. The
      21.03 container's PyTorch 1.9 `torch.optim.SGD` loops over the tensors.
    - Lambda ResNet-50 (scripts/config_v*/config_pytorch_*.sh pass no --memory-format;
      the result logs print `memory_format : nchw`): NCHW in both precisions. July 2022
      ran NGC 21.x containers (PyTorch 1.x: SGD loops over the tensors); December 2025
      NGC 24.10 (PyTorch 2.5: foreach by default).
    - BERT SQuAD, Lambda (scripts/patch/run_squad.py) and NVIDIA (DLE
      PyTorch/LanguageModeling/BERT/run_squad.py, the same code): `--fp16` runs apex
      FusedAdam (multi-tensor, fused); fp32 runs BertAdam, a Python loop of per-tensor
      ops with a per-tensor gradient clip ("bertadam"). Both run DLE's modeling.py, whose attention scales the score maps and adds
      the mask as kernels of their own (`score_scale_mask`).
    """
    wl, prec = row["workload"], row["precision"]
    if wl.startswith("resnet50") and "_dle" in wl:
        fmt: MemoryFormat = "channels_last" if prec == "amp_fp16" else "channels_first"
        return Software(memory_format=fmt, optimizer="loop")
    if wl.startswith("resnet50") and "lambda-2022" in wl:
        return Software(memory_format="channels_first", optimizer="loop")
    if wl.startswith("resnet50") and "lambda" in wl:
        return Software(memory_format="channels_first", optimizer="foreach")
    if wl.startswith("bert"):
        opt: OptimizerImpl = "fused" if prec == "amp_fp16" else "bertadam"
        return Software(optimizer=opt, score_scale_mask=True)
    return DEFAULT_SOFTWARE


def software_text(row: dict[str, str]) -> str:
    if row["workload"].startswith("llama3"):
        return "llama.cpp"
    sw = software(row)
    parts = []
    if row["workload"].startswith("resnet"):  # the layout matters for convolutions only
        parts.append("NCHW" if sw.memory_format == "channels_first" else "NHWC")
    if row["mode"] == "train":
        parts.append(sw.optimizer)
    if sw.score_scale_mask:
        parts.append("scale+mask")
    return ", ".join(parts)


def held_out(row: dict[str, str]) -> bool:
    """Points kept out of development: NVIDIA's BERT tables and Lambda's v2 runs (Hopper
    and Blackwell; collected, then not run until the mechanisms were chosen), and Lambda's
    December 2025 v1 snapshot (not used to choose or check a mechanism in this pass; an
    earlier pass had seen it)."""
    return "held out" in row["notes"] or "lambda-2025" in row["workload"]


def run_precision(row: dict[str, str], card: Card, arch: Architecture | None) -> str:
    """Lambda's "fp32" is PyTorch's default: TF32 convolutions where tensor cores run TF32."""
    p = row["precision"]
    if p == "fp32" and "lambda" in row["workload"] and has_tensor(arch, "tf32", card):
        return "tf32"
    return p


# A layer model's speed before the roofline (kept here as the baseline): FLOPs at 40 %
# of the precision's peak plus 10 us per layer and pass.
OLD_EFFICIENCY = 0.4
OLD_LAUNCH_OVERHEAD_S = 10e-6


def old_layer_speed(model: ModelSpec, tflops: float, batch: int, mode: str) -> float:
    """Samples/s as gputui estimated a layer model before the roofline."""
    flops = model.flops if mode != "train" else 3 * model.flops
    layers = sum(len(n.layers) for n in model.networks)
    passes = 3 if mode == "train" else 1
    seconds = flops * batch / (tflops * 1e12 * OLD_EFFICIENCY) + layers * passes * (
        OLD_LAUNCH_OVERHEAD_S
    )
    return batch / seconds


# fit.llm's own speed before it moved onto fit.roofline (kept here as the baseline).
OLD_LLM_COMPUTE_EFFICIENCY = 0.4
OLD_LLM_BANDWIDTH_EFFICIENCY = 0.8
OLD_LLM_LAUNCH_S = 10e-6  # per layer


def old_llm_speed(
    model: TransformerModel, wl: Workload, card: Card, batch: int
) -> tuple[float | None, float | None]:
    """(prefill, decode) tokens/s as fit.llm computed them before the roofline: prefill by
    FLOPs at 40 % of the tensor peak, decode by the weights and cache read per step at
    80 % of the bandwidth, plus 10 us per layer."""
    from gputui.fit.transformer.formats import weight_format
    from gputui.fit.transformer.kv import kv_cache_bytes
    from gputui.fit.transformer.weights import block_weight_bytes

    cfg, lay = model.config, model.layout
    fmt = weight_format(wl.weights)
    tflops = (
        card.tensor_tflops(fmt.tensor_key)
        or card.tensor_tflops("bf16")
        or card.tensor_tflops("fp16")
        or card.fp32_tflops
    )
    active = lay.params - (0 if cfg.tie_word_embeddings else lay.token_embedding)
    seq = wl.seq_len
    attn = 2 * seq * seq * cfg.q_dim * cfg.num_layers * 0.5
    launch = cfg.num_layers * OLD_LLM_LAUNCH_S
    prefill = decode = None
    if tflops:
        peak = tflops * 1e12 * OLD_LLM_COMPUTE_EFFICIENCY
        prefill = batch * seq / (batch * (2 * active * seq + 2 * attn) / peak + launch)
    bw = card.memory_bandwidth_gbs
    if bw:
        weights = sum(block_weight_bytes(b, fmt) * b.count for b in lay.blocks)
        weights += lay.lm_head * fmt.dense_bytes
        ctx = seq + max(1, wl.new_tokens) // 2
        kv = kv_cache_bytes(cfg, ctx, batch, wl.kv_dtype)
        t_mem = (weights + kv) / (bw * 1e9 * OLD_LLM_BANDWIDTH_EFFICIENCY)
        t_cmp = 2 * active * batch / (tflops * 1e12 * OLD_LLM_COMPUTE_EFFICIENCY) if tflops else 0.0
        decode = batch / (max(t_mem, t_cmp) + launch)
    return prefill, decode


def baseline(
    row: dict[str, str], card: Card, arch: Architecture | None, models: dict[str, ModelSpec]
) -> float | None:
    """The estimate gputui gave before the roofline: for layer models FLOPs at 40 % of the
    precision's peak + launches; for LLMs fit.llm's own speed (decode: bytes at 80 % of
    the bandwidth; prefill: FLOPs at 40 % of the tensor peak)."""
    wl = row["workload"]
    if wl.startswith("llama3_8b"):
        fmt = "gguf-q4_k" if row["precision"] == "Q4_K_M" else "fp16"
        prefill = row["mode"] == "prefill"
        work = Workload(
            mode="generate",
            seq_len=512 if prefill else 1,
            new_tokens=1 if prefill else 512,
            weights=fmt,
        )
        pre, dec = old_llm_speed(LLAMA_MODEL, work, card, int(row["batch"]))
        return pre if prefill else dec
    prec = run_precision(row, card, arch)
    found = rate(card, arch, prec)
    if found.tflops is None:
        return None
    key = wl.split("_train")[0].split("_infer")[0]
    return old_layer_speed(models[key], found.tflops, int(row["batch"]), row["mode"])


def estimate(
    row: dict[str, str], card: Card, arch: Architecture | None, models: dict[str, ModelSpec]
) -> tuple[str, float | None]:
    wl = row["workload"]
    batch = int(row["batch"])
    if wl.startswith("llama3_8b"):
        quant = row["precision"]
        s = transformer_speed.generate_timing(
            card,
            arch,
            weight_bytes=GGUF_BYTES[quant],
            prompt_tokens=512,
            context_tokens=256,  # tg512 from an empty cache: 256 cached tokens on average
            batch=batch,
            compute_precision="fp16",
            dequant_bytes_per_param=DEQUANT_BYTES[quant],
            accumulate16=True,
            # llama.cpp's elementwise kernels, on F32 activations (as `gputui fit` a GGUF)
            extras=step_extras(LLAMA_MODEL, Workload(mode="generate"), card, 4, 1),
            **LLAMA3_8B,
        )
        if s is None:
            return "fp16", None
        return "fp16", s.phases["prefill" if row["mode"] == "prefill" else "decode"].throughput
    key = wl.split("_train")[0].split("_infer")[0]
    prec = run_precision(row, card, arch)
    prof = graph_speed.profile(models[key], card, arch, prec, batch, row["mode"], software(row))
    return prec, prof.samples_per_s if prof else None


def spearman(xs: list[float], ys: list[float]) -> float | None:
    if len(xs) < 3:
        return None

    def ranks(v: list[float]) -> list[float]:
        order = sorted(range(len(v)), key=v.__getitem__)
        r = [0.0] * len(v)
        i = 0
        while i < len(order):
            j = i
            while j + 1 < len(order) and v[order[j + 1]] == v[order[i]]:
                j += 1
            for k in range(i, j + 1):
                r[order[k]] = (i + j) / 2 + 1
            i = j + 1
        return r

    rx, ry = ranks(xs), ranks(ys)
    mx, my = statistics.fmean(rx), statistics.fmean(ry)
    cov = sum((a - mx) * (b - my) for a, b in zip(rx, ry, strict=True))
    sx = math.sqrt(sum((a - mx) ** 2 for a in rx))
    sy = math.sqrt(sum((b - my) ** 2 for b in ry))
    return cov / (sx * sy) if sx and sy else None


def collect() -> list[Point]:
    cat = load_catalog()
    cards = {c.name: c for c in cat.cards}
    resnet = replace(load_keras_model(RESNET50), optimizer="momentum")
    models: dict[str, ModelSpec] = {"resnet50": resnet}
    points = []
    for path in sorted(PUBLISHED.glob("*.csv")):
        with path.open(newline="") as f:
            for row in csv.DictReader(f):
                card = cards[row["gpu"]]
                arch = cat.architectures.get(card.architecture)
                wl = row["workload"]
                for bert, (n, w, h) in {
                    "bert_base_squad": (12, 768, 12),
                    "bert_large_squad": (24, 1024, 16),
                }.items():
                    if wl.startswith(bert) and bert not in models:
                        models[bert] = parse_models(bert_toml(bert, n, w, h, 32))[0]
                run_as, est = estimate(row, card, arch, models)
                points.append(
                    Point(
                        wl,
                        row["precision"],
                        run_as,
                        int(row["batch"]),
                        row["gpu"],
                        float(row["throughput"]),
                        row["unit"],
                        est,
                        path.name,
                        "suspect" in row["notes"],
                        baseline(row, card, arch, models),
                        held_out(row),
                        software_text(row),
                    )
                )
    return points


def groups(points: list[Point]) -> dict[tuple[str, str, int | None], list[Point]]:
    """Points comparable across GPUs: same workload, published precision (and batch, for
    inference tables that list several batch sizes on the same GPU)."""
    out: dict[tuple[str, str, int | None], list[Point]] = defaultdict(list)
    for p in points:
        batch = p.batch if "_infer" in p.workload else None
        out[(p.workload, p.precision, batch)].append(p)
    return dict(out)


def summary_rows(points: list[Point]) -> list[tuple[str, str, int, str, str, str, str, str]]:
    rows = []
    for (wl, prec, batch), pts in sorted(groups(points).items()):
        part = "held out" if all(p.held_out for p in pts) else "dev"
        known = [p for p in pts if p.ratio is not None]
        rho = spearman([p.measured for p in known], [p.estimate or 0.0 for p in known])
        clean = [p for p in known if not p.suspect]
        rho_text = f"{rho:.2f}" if rho is not None else "-"
        if len(clean) < len(known):
            rho_clean = spearman([p.measured for p in clean], [p.estimate or 0.0 for p in clean])
            if rho_clean is not None:
                rho_text += f" ({rho_clean:.2f} without {len(known) - len(clean)} suspect)"
        ratios = [p.ratio for p in known if p.ratio is not None]
        within = sum(1 for r in ratios if 1 / 1.5 <= r <= 1.5)
        base = [p for p in pts if p.baseline_ratio is not None]
        rho_base = spearman([p.measured for p in base], [p.baseline or 0.0 for p in base])
        base_within = sum(1 for p in base if 1 / 1.5 <= (p.baseline_ratio or 0) <= 1.5)
        name = f"{wl} {prec}" + (f" batch {batch}" if batch is not None else "")
        rows.append(
            (
                name,
                part,
                len(known),
                rho_text,
                f"{statistics.median(ratios):.2f}" if ratios else "-",
                f"{within}/{len(ratios)}",
                f"{rho_base:.2f}" if rho_base is not None else "-",
                f"{base_within}/{len(base)}",
            )
        )
    return rows


def within_text(points: list[Point]) -> str:
    known = [p for p in points if p.ratio is not None]
    within = sum(1 for p in known if p.ratio is not None and 1 / 1.5 <= p.ratio <= 1.5)
    share = f" ({within / len(known):.0%})" if known else ""
    return f"{within}/{len(known)}{share}"


def render(points: list[Point]) -> list[str]:
    known = [p for p in points if p.ratio is not None]
    base = [p for p in points if p.baseline_ratio is not None]
    base_within = sum(1 for p in base if 1 / 1.5 <= (p.baseline_ratio or 0) <= 1.5)
    dev = [p for p in points if not p.held_out]
    held = [p for p in points if p.held_out]
    lines = [
        "| workload | set | GPUs | Spearman | median est/meas | within 1.5x "
        "| baseline Spearman | baseline within 1.5x |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in summary_rows(points)]
    lines += [
        "",
        f"All points: {within_text(points)} within a factor of 1.5; "
        f"{len(points) - len(known)} without an estimate. "
        f"Development points: {within_text(dev)}; held-out points: {within_text(held)}. "
        f"Baseline (before the roofline: FLOPs at {OLD_EFFICIENCY:.0%} of peak; fit.llm's speed "
        "for LLMs): "
        f"{base_within}/{len(base)} ({base_within / len(base):.0%}).",
        "",
        "| workload | precision (run as) | batch | GPU | measured | estimate | est/meas "
        "| baseline est/meas | software | source |",
        "|---|---|---:|---|---:|---:|---:|---:|---|---|",
    ]
    for p in points:
        est = f"{p.estimate:,.1f}" if p.estimate is not None else "-"
        ratio = f"{p.ratio:.2f}" if p.ratio is not None else "-"
        flag = " (suspect)" if p.suspect else ""
        held = " (held out)" if p.held_out else ""
        old = f"{p.baseline_ratio:.2f}" if p.baseline_ratio is not None else "-"
        lines.append(
            f"| {p.workload}{held} | {p.precision} ({p.run_as}) | {p.batch} | {p.gpu} | "
            f"{p.measured:,.1f} {p.unit}{flag} | {est} | {ratio} | {old} | {p.software} "
            f"| {p.source} |"
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--md", type=Path, help="also write the tables as markdown to this file")
    ap.add_argument(
        "--dev-only", action="store_true", help="leave the held-out points out (development)"
    )
    args = ap.parse_args(argv)
    if args.dev_only and args.md:
        print("speed_vs_published: --md writes every point; drop --dev-only", file=sys.stderr)
        return 2
    points = collect()
    if args.dev_only:
        points = [p for p in points if not p.held_out]
    lines = render(points)
    print("\n".join(lines))
    if args.md:
        head = (ROOT / "benchmarks" / "speed_vs_published.head.md").read_text(encoding="utf-8")
        args.md.write_text(head + "\n" + "\n".join(lines) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
