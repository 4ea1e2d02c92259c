"""HF config.json fuzz family: real configs from examples/llm, mutated, run through `gputui fit`.

Each case starts from a shipped config of a supported model type (so it is
structurally valid), optionally nests it as a multimodal `text_config`, then
applies a few mutations. A mutation is either harmless (a missing optional key,
an unread key of any type, a valid size) or planted: a value gputui must refuse
(a size over its documented bound, zero or negative, a float, bool or string
where an integer is read, top-k over the experts, KV heads that do not divide
the heads, a `layer_types` of the wrong length or kind, a prompt beyond the
model's context without --allow-longer-context). A planted case that gputui
accepts is a wrong accept; an accepted case is also checked against the
invariants of its JSON answer (the longest context never beyond the model's
context unless allowed).
"""

from __future__ import annotations

import contextlib
import io
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from random import Random
from typing import Any

import generators as gen

FAMILY = "hf"
REPO = Path(__file__).resolve().parents[2]
BASES = sorted((REPO / "examples" / "llm").glob("*.json"))

# size keys gputui reads (where the base config has them) and the smallest valid value
SIZE_KEYS = {
    "hidden_size": 1, "num_hidden_layers": 1, "num_attention_heads": 1, "num_key_value_heads": 1,
    "head_dim": 1, "intermediate_size": 1, "vocab_size": 1, "max_position_embeddings": 1,
    "n_embd": 1, "n_layer": 1, "n_head": 1, "n_positions": 1, "ffn_dim": 1, "dim": 1,
    "n_heads": 1, "n_layers": 1, "hidden_dim": 1, "word_embed_proj_dim": 1,
    "num_local_experts": 1, "num_experts": 1, "n_routed_experts": 0, "num_experts_per_tok": 1,
    "moe_intermediate_size": 1, "shared_expert_intermediate_size": 0, "decoder_sparse_step": 1,
    "kv_lora_rank": 1, "q_lora_rank": 1, "qk_nope_head_dim": 1, "qk_rope_head_dim": 1,
    "v_head_dim": 1, "n_shared_experts": 0, "first_k_dense_replace": 0, "moe_layer_freq": 1,
    "type_vocab_size": 0, "sliding_window": 0,
}  # fmt: skip
# keys a model type does not read (a bad value there is harmless)
UNREAD = {
    "qwen2": {"sliding_window"}, "qwen2_moe": {"sliding_window"},
    "qwen3": {"sliding_window"}, "qwen3_moe": {"sliding_window", "num_local_experts"},
    "gpt_oss": {"experts_per_token"}, "gptj": {"n_inner"},
}  # fmt: skip
LAYER_TYPES_READ = ("gemma2", "gemma3_text", "gpt_oss")
TOPK_OF = {"mixtral": "num_local_experts", "gpt_oss": "num_local_experts",
           "qwen2_moe": "num_experts", "qwen3_moe": "num_experts",
           "deepseek_v2": "n_routed_experts", "deepseek_v3": "n_routed_experts"}  # fmt: skip
HEADS = {"gpt2": "n_head", "gptj": "n_head", "distilbert": "n_heads"}
CLASSIC = ("gpt2", "gptj", "gpt_neox", "opt", "bert", "roberta", "distilbert")
HUGE = [10**7, 2**31, 2**32 + 1, 2**63, 10**30, 5 * 10**6, 1 << 40]


@dataclass
class Case:
    config: dict[str, Any]
    argv: list[str]
    planted: list[str] = field(default_factory=list)
    context: int | None = None  # the model's context when the run must not go beyond it
    touched: set[str] = field(default_factory=set)  # keys planted on: later mutations keep off
    # "file": CONFIG.json; "folder": a model folder with a safetensors header; "cache": the
    # folder as a Hugging Face cache snapshot, `--hf fuzz/model`, with this refs/main
    layout: str = "file"
    ref: str = ""


def _target(case: dict[str, Any]) -> dict[str, Any]:
    text = case.get("text_config")
    return text if isinstance(text, dict) else case


LONG = ("max_position_embeddings", "n_positions", "sliding_window")


def _bad_int(rng: Random, minimum: int, key: str = "") -> Any:
    roll = rng.random()
    if roll < 0.35:
        if key in LONG:  # positions admit 10M-token models: only far beyond is planted
            return rng.choice((2**31, 2**40, 10**30))
        return rng.choice(HUGE) * rng.choice((1, 1, 3))
    if roll < 0.55:
        return rng.choice((minimum - 1, -1, -(2**40)))
    if roll < 0.7:
        return rng.choice((4096.0, 1.5, float("inf"), float("nan"), 1e300))
    if roll < 0.8:
        return rng.choice((True, False))
    if roll < 0.9:
        return rng.choice(("4096", "", "12a", "\u0661\u0662"))
    return rng.choice(([4096], {"value": 4096}, [[1] * 3]))


def _deep(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = {"x": value} if depth % 2 else [value]
    return value


def _mutate(rng: Random, case: Case, mt: str) -> None:
    cfg = _target(case.config)
    reads = [
        k
        for k in SIZE_KEYS
        if k in cfg and k not in UNREAD.get(mt, set()) and k not in case.touched
    ]
    if mt == "qwen2" or mt == "qwen2_moe":
        reads = [k for k in reads if k != "sliding_window"]
    roll = rng.random()
    if roll < 0.35 and reads:
        key = rng.choice(reads)
        value = _bad_int(rng, SIZE_KEYS[key], key)
        if key == "sliding_window" and value in (0, False, None):
            value = -1
        if key in ("n_routed_experts",) and value == 0:
            value = -1
        cfg[key] = value
        case.planted.append(f"{key} = {value!r}")
        case.touched.add(key)
    elif roll < 0.45 and mt in TOPK_OF and TOPK_OF[mt] in cfg:
        experts = cfg[TOPK_OF[mt]]
        if isinstance(experts, int) and not isinstance(experts, bool) and experts > 0:
            key = "num_experts_per_tok"
            cfg[key] = experts + rng.choice((1, 7, 1000))
            if mt == "gpt_oss":
                cfg.pop("experts_per_token", None)
            case.planted.append(f"{key} = {cfg[key]} > experts {experts}")
            case.touched |= {key, TOPK_OF[mt]}
    elif roll < 0.55 and mt not in CLASSIC and mt not in ("deepseek_v2", "deepseek_v3"):
        heads = cfg.get("num_attention_heads")
        if isinstance(heads, int) and not isinstance(heads, bool) and heads > 1:
            kv = next(d for d in range(2, heads + 2) if heads % d)
            cfg["num_key_value_heads"] = kv
            case.planted.append(f"num_key_value_heads = {kv} does not divide {heads}")
            case.touched |= {"num_key_value_heads", "num_attention_heads"}
    elif roll < 0.65 and mt in LAYER_TYPES_READ:
        n = cfg.get("num_hidden_layers")
        if isinstance(n, int) and not isinstance(n, bool) and 0 < n < 10_000:
            how = rng.random()
            if how < 0.4:
                cfg["layer_types"] = ["full_attention"] * (n + rng.choice((1, -1, 5)))
            elif how < 0.7:
                kinds = ["full_attention"] * n
                kinds[rng.randrange(n)] = rng.choice(("linear_attention", "", "FULL", 3, None))
                cfg["layer_types"] = kinds
            else:
                cfg["layer_types"] = rng.choice(("full_attention", {"0": "full"}, 12))
            case.planted.append(f"layer_types = {str(cfg['layer_types'])[:40]}")
            case.touched |= {"layer_types", "num_hidden_layers"}
    elif roll < 0.7 and mt in ("gemma3_text",):
        cfg["sliding_window_pattern"] = _bad_int(rng, 1)
        case.planted.append(f"sliding_window_pattern = {cfg['sliding_window_pattern']!r}")
        case.touched.add("sliding_window_pattern")
    elif roll < 0.78:
        # harmless: an unread key of any type, or deep nesting under an unread key
        cfg[rng.choice(("rope_theta_x", "notes", "initializer_range_x"))] = rng.choice(
            (None, "x", [1, 2], _deep(rng.randrange(1, 120)), 10**40, -5)
        )
    elif roll < 0.86 and reads:
        # a read size key deeply nested: not an integer
        key = rng.choice(reads)
        cfg[key] = _deep(rng.randrange(2, 150))
        case.planted.append(f"{key} = deep nesting")
        case.touched.add(key)
    elif roll < 0.93 and reads:
        key = rng.choice(reads)
        del cfg[key]  # a default may apply, or it is required: either way no traceback
    else:
        # harmless: a valid, smaller size
        key = rng.choice(["num_hidden_layers", "vocab_size", "n_layer", "n_layers"])
        if (
            key not in case.touched
            and isinstance(cfg.get(key), int)
            and not isinstance(cfg.get(key), bool)
        ):
            cfg[key] = max(1, cfg[key] // rng.choice((1, 2, 3)))
            if (
                "layer_types" in cfg
                and key == "num_hidden_layers"
                and "layer_types" not in case.touched
            ):
                cfg.pop("layer_types")


QUANT_OK = [
    {"quant_method": "gptq", "bits": 4, "group_size": 128},
    {"quant_method": "awq", "w_bit": 4, "q_group_size": 128},
    {"quant_method": "bitsandbytes", "load_in_4bit": True, "bnb_4bit_quant_type": "nf4"},
    {"quant_method": "bitsandbytes", "load_in_8bit": True},
    {"quant_method": "fp8"},
    {
        "quant_method": "compressed-tensors",
        "format": "pack-quantized",
        "ignore": ["lm_head"],
        "config_groups": {
            "g": {
                "targets": ["Linear"],
                "weights": {
                    "num_bits": 4,
                    "type": "int",
                    "symmetric": False,
                    "strategy": "group",
                    "group_size": 64,
                },
            }
        },
    },
    {
        "quant_method": "compressed-tensors",
        "format": "float-quantized",
        "config_groups": {
            "g": {
                "targets": ["Linear"],
                "weights": {"num_bits": 8, "type": "float", "strategy": "channel"},
            }
        },
    },
]
QUANT_BAD = [
    {
        "quant_method": "compressed-tensors",
        "config_groups": {"g": {"weights": {"num_bits": 4, "type": "int", "strategy": "block"}}},
    },
    {
        "quant_method": "compressed-tensors",
        "config_groups": {
            "g": {"weights": {"num_bits": 4, "strategy": "group", "group_size": 128}}
        },
        "ignore": ["re:.*q_proj"],
    },
    {"quant_method": "compressed-tensors", "config_groups": [1]},
    {"quant_method": "compressed-tensors", "format": "dense", "config_groups": {}},
    {"quant_method": "gptq", "bits": 5},
    {"quant_method": "gptq", "bits": "4"},
    {"quant_method": "gptq", "bits": 4, "group_size": 10**12},
    {"quant_method": "awq", "w_bit": 4.0},
    {"quant_method": "zzz"},
    {"quant_method": 7},
    {"quant_method": "bitsandbytes"},
    {"quant_method": "bitsandbytes", "load_in_4bit": True, "bnb_4bit_quant_type": "xyz"},
    {"quant_method": "bitsandbytes", "load_in_4bit": "yes"},
    "gptq",
    [1, 2],
]
LLAMA_READS_FLAGS = ("tie_word_embeddings", "attention_bias", "mlp_bias")
# CLI flags: (flag, the mode it needs or None) and values over their bounds
FLAGS = [("--batch-size", None), ("--gpus", None), ("--lora-rank", "train"),
         ("--grad-accum", "train"), ("--paged", "generate"), ("--prefill-chunk", "generate"),
         ("--seq-len", None), ("--new-tokens", "generate")]  # fmt: skip
OVER = ["0", "-3", str(2**31), str(10**40)]
# values at or near the bound: valid, and must still be answered in time
AT_BOUND = {"--batch-size": [str(1 << 20), "65537"], "--gpus": [str(1 << 16), "4096"],
            "--lora-rank": [str(1 << 16), "4096"], "--grad-accum": [str(1 << 20)],
            "--paged": [str(1 << 20), "1"], "--prefill-chunk": [str(1 << 27), "1"],
            "--seq-len": [str(1 << 27), "1"], "--new-tokens": [str(1 << 27), "1"]}  # fmt: skip


def _mutate_extra(rng: Random, case: Case, mt: str) -> None:
    """Quantization, flags, dropouts, MoE layer lists and command-line numbers."""
    cfg = _target(case.config)
    roll = rng.random()
    if roll < 0.25:
        if rng.random() < 0.5:
            cfg["quantization_config"] = dict(rng.choice(QUANT_OK))
        else:
            q = rng.choice(QUANT_BAD)
            cfg["quantization_config"] = dict(q) if isinstance(q, dict) else q
            case.planted.append(f"quantization_config = {str(q)[:40]}")
    elif roll < 0.4 and mt not in CLASSIC:
        key = rng.choice(LLAMA_READS_FLAGS)
        cfg[key] = rng.choice(("yes", 1, 0, [True]))
        case.planted.append(f"{key} = {cfg[key]!r}")
    elif roll < 0.55 and mt not in CLASSIC:
        cfg["attention_dropout"] = rng.choice((float("nan"), float("inf"), 2.0, -0.1, "0.1"))
        case.planted.append(f"attention_dropout = {cfg['attention_dropout']!r}")
    elif roll < 0.7 and mt in ("qwen2_moe", "qwen3_moe"):
        n = cfg.get("num_hidden_layers")
        n = n if isinstance(n, int) and not isinstance(n, bool) else 24
        cfg["mlp_only_layers"] = rng.choice(
            ([n + 3], [True], [-1], ["0"], "0", list(range(200_000)), [0.0])
        )
        case.planted.append(f"mlp_only_layers = {str(cfg['mlp_only_layers'])[:30]}")
        case.touched.add("num_hidden_layers")
    elif roll < 0.8:
        cfg["text_config"] = rng.choice(("x", [1], None, {"model_type": 3}))
        # read only when the top level has no num_hidden_layers: harmless otherwise
    else:
        flag, mode = rng.choice(FLAGS)
        if "--mode" in case.argv or (
            mode == "generate" and mt in ("bert", "roberta", "distilbert")
        ):
            return
        value = rng.choice(OVER + AT_BOUND[flag])
        case.argv += [flag, value]
        if mode is not None:
            case.argv += ["--mode", mode]
        if flag in ("--seq-len", "--new-tokens"):
            case.argv.append("--allow-longer-context")  # the bound, not the context, is tested
        if value in OVER:
            case.planted.append(f"{flag} {value}")


def make_case(rng: Random) -> Case:
    base = json.loads(rng.choice(BASES).read_text())
    mt = str(base.get("model_type"))
    config: dict[str, Any] = base
    if rng.random() < 0.15 and mt not in CLASSIC:
        tower = {"model_type": "clip_vision_model", "hidden_size": 64, "intermediate_size": 128,
                 "num_attention_heads": 4, "num_hidden_layers": 2, "image_size": 32,
                 "patch_size": 8}  # fmt: skip
        config = {"model_type": "llava", "text_config": base, "vision_config": tower}
    case = Case(config, ["--gpu", "RTX 3090", "--json"])
    roll = rng.random()
    if roll < 0.1:
        case.layout = "folder"
    elif roll < 0.2:
        case.layout, case.ref = "cache", rng.choice(REFS)
    for _ in range(rng.choice((0, 1, 1, 2, 3))):
        _mutate(rng, case, mt)
    if rng.random() < 0.35:
        _mutate_extra(rng, case, mt)
    cfg = _target(config)
    roll = rng.random()
    if "--mode" in case.argv:
        pass
    elif (
        roll < 0.35
        and mt not in ("bert", "roberta", "distilbert")
        # a flag mutation already set them: a second --seq-len would override the planted one
        and not {"--seq-len", "--new-tokens", "--allow-longer-context"} & set(case.argv)
    ):
        ctx = cfg.get("max_position_embeddings", cfg.get("n_positions"))
        seq = rng.choice((16, 512, 4096, 8192, 32768, 300_000, 10**7))
        new = rng.choice((None, 1, 256, 4096))
        case.argv += ["--mode", "generate", "--seq-len", str(seq)]
        if new is not None:
            case.argv += ["--new-tokens", str(new)]
        allow = rng.random() < 0.3
        if allow:
            case.argv.append("--allow-longer-context")
        if isinstance(ctx, int) and not isinstance(ctx, bool) and ctx > 0:
            if seq + (new or 256) > ctx and not allow:
                case.planted.append(f"--seq-len {seq} + new tokens beyond context {ctx}")
            if not allow:
                case.context = ctx
    elif roll < 0.5:
        case.argv.remove("--json")  # the text report
    return case


def case_text(case: Case) -> str:
    return json.dumps(
        {"layout": case.layout, "ref": case.ref, "argv": case.argv, "planted": case.planted,
         "config": case.config}
    )  # fmt: skip


REFS = ["abc123", "", "../../../etc", "abc123\n", "\x00\xff", "nope", "." * 300]


def _place(case: Case, workdir: Path) -> list[str]:
    """Write the case's files; the arguments that name them to `gputui fit`."""
    import shutil

    from gputui.fit.importers.safetensors import write_header_only

    for old in ("config.json", "model", "hub"):
        target = workdir / old
        if target.is_dir():
            shutil.rmtree(target)
        elif target.exists():
            target.unlink()
    if case.layout == "file":
        path = workdir / "config.json"
        path.write_text(json.dumps(case.config), encoding="utf-8")
        return [str(path)]
    folder = workdir / "model"
    if case.layout == "cache":
        folder = workdir / "hub" / "models--fuzz--model" / "snapshots" / "abc123"
        refs = workdir / "hub" / "models--fuzz--model" / "refs"
        refs.mkdir(parents=True)
        (refs / "main").write_bytes(case.ref.encode("utf-8", "surrogateescape"))
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps(case.config), encoding="utf-8")
    write_header_only(folder / "model.safetensors", {"w": ("BF16", (64, 64))})
    return ["--hf", "fuzz/model"] if case.layout == "cache" else [str(folder)]


def run_case(case: Case, workdir: Path) -> gen.Outcome:
    import os

    from gputui.cli import main

    where = _place(case, workdir)
    out, err = io.StringIO(), io.StringIO()
    saved = os.environ.get("HF_HUB_CACHE")
    os.environ["HF_HUB_CACHE"] = str(workdir / "hub")
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(["fit", *where, *case.argv])
    finally:
        if saved is None:
            os.environ.pop("HF_HUB_CACHE", None)
        else:
            os.environ["HF_HUB_CACHE"] = saved
    text, errors = out.getvalue(), err.getvalue()
    if any(ord(c) < 0x20 and c not in "\n\t" for c in text + errors):
        return gen.Outcome("wrong-accept", f"control character in the output | {text[:60]!r}")
    if code == 2:
        lines = errors.strip().splitlines()
        if len(lines) != 1 or text:
            return gen.Outcome("wrong-accept", f"exit 2 without one line | {errors[:80]!r}")
        return gen.Outcome("rejected", lines[0])
    if code not in (0, 1):
        return gen.Outcome("wrong-accept", f"exit {code} | {errors[:80]!r}")
    if case.planted:
        what = case.planted[0].split(" = ")[0].split(" ")[0]
        return gen.Outcome("wrong-accept", f"accepted invalid {what} | {case.planted[0]}")
    if "--json" in case.argv:
        (data,) = json.loads(text, parse_constant=gen._no_constant)["models"]
        if data["model"]["params"] <= 0:
            return gen.Outcome("wrong-accept", f"params <= 0 | {data['model']['params']}")
        for est in data["estimates"] or ():  # None with --all-cards (a ranking instead)
            if case.context is not None and est["longest_context"] > case.context:
                return gen.Outcome(
                    "wrong-accept",
                    f"longest context beyond the model's | {est['longest_context']} > {case.context}",
                )
            if not math.isfinite(est["peak_bytes"]) or est["peak_bytes"] <= 0:
                return gen.Outcome("wrong-accept", f"peak not positive | {est['peak_bytes']}")
    return gen.OK
