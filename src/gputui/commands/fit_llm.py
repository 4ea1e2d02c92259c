"""`gputui fit` for transformers: a Hugging Face config.json or model folder, `--hf ORG/NAME`
from the local cache, or a GGUF file; train (full, LoRA, QLoRA), inference or generate.

`add_arguments` adds the LLM flags to the `fit` parser; `handles` says whether a
parsed command line is for this module; `run` prints text or JSON like `gputui fit`.
Exit 0 when it fits (in the memory free now, for an installed GPU), 1 when not, 2 on bad input.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

MODES = ("train", "inference", "eval", "generate")
METHODS = ("full", "lora", "qlora")
ATTENTIONS = ("sdpa", "eager", "flash")
PARALLELS = ("tp", "pp", "ddp", "zero1", "zero2", "zero3", "fsdp")
OPTIMIZERS = ("adamw", "adamw_8bit", "sgd", "sgd_momentum")
KV_DTYPES = ("fp16", "bf16", "fp32", "fp8", "int8", "q8_0", "q4_0")
LLM_KINDS = ("hf-config", "hf-folder", "gguf")


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The transformer-only flags; --mode, --optimizer and --device are `gputui fit`'s own
    (commands/fit.py), shared with layer models and checked here against MODES/OPTIMIZERS."""
    g = p.add_argument_group("transformers and LLMs (HF config.json / model folder / GGUF)")
    g.add_argument(
        "--hf", metavar="ORG/NAME", help="a model from the local Hugging Face cache (offline)"
    )
    g.add_argument(
        "--method",
        choices=METHODS,
        help="train: full fine-tune, LoRA or QLoRA (default: full; lora with --lora-rank)",
    )
    g.add_argument(
        "--seq-len",
        type=int,
        metavar="N",
        help="tokens per sequence (generate: the prompt); default 2048 or the model's maximum",
    )
    g.add_argument(
        "--allow-longer-context",
        action="store_true",
        help="estimate a prompt + new tokens beyond the model's max_position_embeddings "
        "(refused otherwise: the model was not trained that long)",
    )
    g.add_argument(
        "--new-tokens",
        type=int,
        metavar="N",
        help="generate: tokens decoded after the prompt (default 256)",
    )
    g.add_argument(
        "--weights",
        metavar="FORMAT",
        help="base weights: fp32 fp16 bf16 fp8 int8 nf4 nf4-dq fp4 gptq awq mxfp4 or a GGUF type (q4_k, q8_0, ...)",
    )
    g.add_argument("--kv-dtype", choices=KV_DTYPES, help="KV-cache element type (default fp16)")
    g.add_argument(
        "--paged",
        nargs="?",
        const=16,
        type=int,
        metavar="BLOCK",
        help="paged KV cache in blocks of BLOCK tokens (vLLM: 16)",
    )
    g.add_argument(
        "--mla-cache",
        choices=("latent", "expanded"),
        help="DeepSeek MLA: cache the latent (serving engines, default) or expanded K/V (transformers)",
    )
    g.add_argument(
        "--prefill-chunk",
        type=int,
        metavar="N",
        help="process the prompt N tokens at a time (llama.cpp's n_ubatch; default 512 for GGUF)",
    )
    g.add_argument("--lora-rank", type=int, metavar="R", help="LoRA rank (implies --method lora)")
    g.add_argument(
        "--lora-alpha",
        type=float,
        metavar="A",
        help="LoRA alpha (no memory effect; default 2 x rank)",
    )
    g.add_argument(
        "--lora-targets",
        metavar="LIST",
        help="comma-separated modules (default q,k,v,o; PEFT names work; all-linear)",
    )
    g.add_argument(
        "--grad-checkpointing",
        action="store_true",
        help="train: recompute each layer in the backward",
    )
    g.add_argument(
        "--grad-accum",
        type=int,
        metavar="N",
        help="train: micro-batches per optimizer step (default 1)",
    )
    g.add_argument(
        "--attention", choices=ATTENTIONS, help="attention implementation (default sdpa)"
    )
    g.add_argument("--gpus", type=int, metavar="N", help="GPUs to spread over (default 1)")
    g.add_argument(
        "--parallel",
        choices=PARALLELS,
        help="how: tp/pp (any mode), ddp/zero1/zero2/zero3/fsdp (train)",
    )
    g.add_argument(
        "--tp",
        type=int,
        metavar="N",
        help="tensor-parallel size (default: all GPUs with --parallel tp)",
    )
    g.add_argument(
        "--pp",
        type=int,
        metavar="N",
        help="pipeline-parallel size (default: all GPUs with --parallel pp)",
    )


def detect(path: Path) -> str | None:
    """What a `fit` input is, by content: hf-config, hf-folder, gguf, or None (anything else)."""
    from gputui.core.errors import UserError
    from gputui.fit.importers import detect_kind

    try:
        kind = detect_kind(path)
    except UserError:  # unreadable: the models loader reports it in its own words
        return None
    return kind if kind in LLM_KINDS else None


# Flags that mean nothing for a layer model (a models TOML or a Keras file): given there, they
# are refused rather than silently ignored.
LLM_ONLY_FLAGS = (
    "method",
    "seq_len",
    "new_tokens",
    "allow_longer_context",
    "weights",
    "kv_dtype",
    "paged",
    "mla_cache",
    "prefill_chunk",
    "lora_rank",
    "lora_alpha",
    "lora_targets",
    "grad_checkpointing",
    "grad_accum",
    "attention",
    "gpus",
    "parallel",
    "tp",
    "pp",
)


def refuse_llm_only_flags(args: argparse.Namespace) -> None:
    from gputui.core.errors import UserError

    given = [f for f in LLM_ONLY_FLAGS if getattr(args, f, None) not in (None, False)]
    if given:
        flag = "--" + given[0].replace("_", "-")
        raise UserError(
            f"{flag}: applies to transformer models (a Hugging Face config.json or model "
            "folder, a GGUF file, or --hf ORG/NAME), not to a models TOML or Keras file"
        )


def handles(args: argparse.Namespace) -> bool:
    if getattr(args, "hf", None):
        return True
    path = getattr(args, "models", None)
    return path is not None and detect(Path(path)) is not None


def load_model(args: argparse.Namespace) -> Any:
    from gputui.core.errors import UserError

    if args.hf:
        if args.models is not None:
            raise UserError("--hf: give either a file or --hf ORG/NAME, not both")
        from gputui.fit.importers.hf import load_cached

        return load_cached(args.hf)
    path = Path(args.models)
    kind = detect(path)
    if kind == "gguf":
        from gputui.fit.importers.gguf import load_gguf

        return load_gguf(path)
    from gputui.fit.importers.hf import load_path

    return load_path(path)


def workload(args: argparse.Namespace, model: Any, precision_default: str) -> Any:
    """The workload the flags describe, every value checked (UserError names the flag)."""
    from dataclasses import replace

    from gputui.commands.fit_llm_bounds import check_flag_numbers
    from gputui.core.errors import UserError
    from gputui.fit.transformer.context import check_context, default_seq
    from gputui.fit.transformer.formats import weight_format
    from gputui.fit.transformer.weights import normalize_targets
    from gputui.fit.transformer.workload import DEFAULT_LORA_TARGETS, Workload

    cfg = model.config
    check_flag_numbers(args)
    if getattr(args, "memory_format", None):
        raise UserError(
            f"--memory-format {args.memory_format}: applies to layer models with convolutions "
            f"(a models TOML or Keras file); {model.name} is a transformer and has none"
        )
    mode = args.mode or ("inference" if cfg.encoder else "generate")
    if cfg.encoder and mode == "generate":
        raise UserError(
            f"--mode generate: {model.name} is an encoder ({cfg.model_type}); it does not generate"
        )
    if model.kind == "gguf" and mode == "train":
        raise UserError(
            "--mode train: GGUF files are llama.cpp inference checkpoints; train from the HF model"
        )
    train_only = {"--method": args.method, "--lora-rank": args.lora_rank, "--lora-alpha": args.lora_alpha,
                  "--lora-targets": args.lora_targets, "--optimizer": args.optimizer,
                  "--grad-accum": args.grad_accum,
                  "--optimizer-impl": getattr(args, "optimizer_impl", None)}  # fmt: skip
    if args.grad_checkpointing:
        train_only["--grad-checkpointing"] = True
    if mode != "train":
        for flag, value in train_only.items():
            if value is not None:
                raise UserError(f"{flag}: only with --mode train (mode is {mode})")
    gen_only = {"--new-tokens": args.new_tokens, "--kv-dtype": args.kv_dtype, "--paged": args.paged,
                "--mla-cache": args.mla_cache, "--prefill-chunk": args.prefill_chunk}  # fmt: skip
    if mode != "generate":
        for flag, value in gen_only.items():
            if value is not None:
                raise UserError(f"{flag}: only with --mode generate (mode is {mode})")
    new_tokens = args.new_tokens or 256
    seq = args.seq_len or default_seq(cfg, mode, new_tokens)
    allow = bool(getattr(args, "allow_longer_context", False))
    check_context(cfg, seq, new_tokens, mode, allow, new_given=args.new_tokens is not None)
    method = args.method or ("lora" if args.lora_rank or args.lora_targets else "full")
    weights_name = args.weights
    if (
        weights_name is None
        and args.precision in ("bf16", "fp16", "fp32", "int8", "fp8")
        and mode != "train"
    ):
        weights_name = args.precision
    if weights_name is None:
        weights_name = "nf4-dq" if method == "qlora" else model.default_weights
        if mode == "train" and method == "lora" and weights_name not in ("bf16", "fp16", "fp32"):
            weights_name = "bf16"
    try:
        fmt = weight_format(weights_name)
    except ValueError as exc:
        raise UserError(f"--weights: {exc}") from None
    if method == "lora" and fmt.name in ("nf4", "nf4-dq", "fp4", "fp4-dq"):
        method = "qlora"
    if method == "qlora" and fmt.name not in ("nf4", "nf4-dq", "fp4", "fp4-dq"):
        raise UserError(
            f"--weights {weights_name}: QLoRA trains on a 4-bit bitsandbytes base (nf4, nf4-dq, fp4)"
        )
    if mode == "train" and method == "full" and args.weights is not None:
        raise UserError(
            "--weights: a full fine-tune keeps its weights in --precision (fp32, amp_bf16, bf16, ...)"
        )
    if mode == "train" and method == "full" and fmt.quantized:
        fmt = weight_format("bf16")
    precision = precision_default
    if mode == "train" and method == "full" and args.precision is not None:
        if args.precision not in ("fp32", "amp_bf16", "amp_fp16", "bf16", "fp16"):
            raise UserError(
                f"--precision {args.precision}: training uses fp32, amp_bf16, amp_fp16, bf16 or fp16"
            )
        precision = args.precision
    targets: tuple[str, ...] = DEFAULT_LORA_TARGETS
    if args.lora_targets is not None:
        try:
            targets = normalize_targets(args.lora_targets.split(","))
        except ValueError as exc:
            raise UserError(f"--lora-targets: {exc}") from None
    rank = args.lora_rank or 16
    if args.optimizer is not None and args.optimizer not in OPTIMIZERS:
        raise UserError(
            f"--optimizer {args.optimizer}: transformer training takes " + ", ".join(OPTIMIZERS)
        )
    optimizer = args.optimizer or ("adamw_8bit" if method == "qlora" else "adamw")
    gpus = args.gpus or 1
    parallel = args.parallel or ("none" if gpus == 1 else ("ddp" if mode == "train" else "tp"))
    if auto_parallel(args) and parallel == "tp" and cfg.num_heads % gpus and gpus <= cfg.num_layers:
        parallel = "pp"  # the heads do not split that way; run() picks from every strategy
    if parallel in ("ddp", "zero1", "zero2", "zero3", "fsdp") and mode != "train":
        raise UserError(
            f"--parallel {parallel}: data parallelism and sharding are for --mode train"
        )
    tp = args.tp or (gpus if parallel == "tp" else 1)
    pp = args.pp or (gpus if parallel == "pp" else 1)
    if gpus % (tp * pp):
        raise UserError(f"--gpus {gpus}: must be a multiple of tp x pp = {tp * pp}")
    if gpus == 1 and parallel != "none":
        raise UserError(f"--parallel {parallel}: needs --gpus 2 or more")
    if cfg.num_heads % tp:
        raise UserError(
            f"--tp {tp}: must divide the {cfg.num_heads} attention heads of {model.name}"
        )
    if pp > cfg.num_layers:
        raise UserError(f"--pp {pp}: more stages than the model's {cfg.num_layers} layers")
    attention = args.attention or "sdpa"
    if cfg.mla is None and args.mla_cache is not None:
        raise UserError(f"--mla-cache: {model.name} has no multi-head latent attention")
    wl = Workload(
        mode=mode,  # type: ignore[arg-type]
        batch_size=args.batch_size or 1,
        seq_len=seq,
        new_tokens=new_tokens,
        method=method,  # type: ignore[arg-type]
        precision=precision,  # type: ignore[arg-type]
        weights=fmt.name,
        optimizer=optimizer,  # type: ignore[arg-type]
        optimizer_impl=getattr(args, "optimizer_impl", None) or "foreach",
        lora_rank=rank,
        lora_alpha=args.lora_alpha or 2.0 * rank,
        lora_targets=targets,
        grad_checkpointing=bool(args.grad_checkpointing),
        grad_accum=args.grad_accum or 1,
        attention=attention,  # type: ignore[arg-type]
        kv_dtype=args.kv_dtype or "fp16",
        paged_block=args.paged,
        mla_cache=args.mla_cache or "latent",
        gpus=gpus,
        parallel=parallel,  # type: ignore[arg-type]
        tp=tp,
        pp=pp,
        prefill_chunk=args.prefill_chunk
        or (512 if model.kind == "gguf" and mode == "generate" else None),
        backend=args.device or "cuda",
    )
    return replace(wl)


def auto_parallel(args: argparse.Namespace) -> bool:
    """No --parallel, --tp or --pp with --gpus 2 or more: run() picks the cheapest strategy
    that fits (fit.llm.parallel_choice)."""
    given = (getattr(args, f, None) is not None for f in ("parallel", "tp", "pp"))
    return (getattr(args, "gpus", None) or 1) > 1 and not any(given)


def _precision_for(target: Any, mode: str) -> str:
    from gputui.fit.core.precision import recommend

    name, _ = recommend(target.architecture, "train")
    return str(name) if mode == "train" else "amp_bf16"


def run(args: argparse.Namespace) -> int:
    import json

    from gputui.core.errors import UserError
    from gputui.fit.transformer.estimate import estimate
    from gputui.fit.transformer.ranking import rank_cards
    from gputui.fit.transformer.report import (
        SCHEMA_VERSION,
        estimate_dict,
        model_dict,
        ranking_dict,
        render,
        render_ranking,
        workload_dict,
    )

    if getattr(args, "layers", False):
        raise UserError("--layers: the per-layer table is for layer-list models, not transformers")
    if getattr(args, "model", None):
        raise UserError(
            "--model: picks a model of a models TOML; a transformer file holds one model"
        )
    from gputui.fit.transformer.context import mark_longer_context

    model = load_model(args)
    allow = bool(getattr(args, "allow_longer_context", False))
    header: dict[str, Any] = {"schema_version": SCHEMA_VERSION, "kind": "transformer"}
    if getattr(args, "prometheus", None) or getattr(args, "match", None):  # the fleet
        from gputui.commands.fit_fleet import run_fit
        from gputui.commands.fit_transformers import config_fleet_entry

        return run_fit(args, (), header, (config_fleet_entry(args, model),))
    if args.all_cards:
        from gputui.catalog import load_catalog

        catalog = load_catalog()
        wl = workload(args, model, "amp_bf16")
        pick = None
        if auto_parallel(args):
            from gputui.fit.transformer.parallel_choice import choose

            built: dict[Any, Any] = {}
            pick = lambda w, t: choose(model, w, [t], built)[0]  # noqa: E731
        ranked = rank_cards(model, wl, catalog.cards, dict(catalog.architectures), pick)
        ok = any(r.estimate.fits for r in ranked)
        if args.json:
            payload = {
                **header,
                "model": model_dict(model),
                "workload": workload_dict(wl, model),
                "all_fit": ok,
                "ranking": ranking_dict(ranked),
            }
            print(json.dumps(payload, indent=2))
        else:
            per_card = any(r.estimate.workload.parallel != wl.parallel for r in ranked)
            print("\n".join(render_ranking(model, wl, ranked, per_card)))
        return 0 if ok else 1
    from gputui.commands.fit import EXIT_PARTIAL, _target_line, _targets
    from gputui.fit.core.mig import advice_lines

    targets, unavailable = _targets(args)
    lost_lines = [
        f"GPU {u.index}: {u.name}: unavailable, not checked: {u.reason}" for u in unavailable
    ]
    if not targets:  # every GPU asked about is lost or unreadable
        if args.json:
            print(
                json.dumps(
                    {**header, "unavailable_gpus": [vars_of(u) for u in unavailable]}, indent=2
                )
            )
        else:
            print("\n".join(lost_lines))
        return EXIT_PARTIAL
    from gputui.core.textsafe import visible
    from gputui.fit.transformer.parallel_choice import asked, choose, hint_lines

    wl = workload(args, model, _precision_for(targets[0], args.mode or ""))
    wl, choice = choose(model, wl, targets) if auto_parallel(args) else (wl, asked(wl))
    results = [mark_longer_context(estimate(model, wl, t), allow) for t in targets]
    ok = all(e.fits_now for e in results)
    if args.json:
        payload = {
            **header,
            "model": model_dict(model),
            "workload": workload_dict(wl, model),
            "parallel_choice": choice.as_dict(),
            "all_fit": ok and not unavailable,
            "unavailable_gpus": [vars_of(u) for u in unavailable],
            "estimates": [estimate_dict(e) for e in results],
            "mig_advice": advice_lines([(e.target, e.peak_bytes) for e in results], prefix=""),
        }
        print(json.dumps(payload, indent=2))
    else:
        lines = render(model, wl, results, [_target_line(t) for t in targets])
        why = choice.line()
        print("\n".join(lines[:2] + ([visible(why)] if why else []) + lines[2:]))
        for line in advice_lines([(e.target, e.peak_bytes) for e in results]):
            print(line)
        if lost_lines:
            print("\n" + "\n".join(lost_lines))
        for line in hint_lines(model, wl, results[0]):
            print(visible(line))
    return 1 if not ok else (EXIT_PARTIAL if unavailable else 0)


def vars_of(u: Any) -> dict[str, Any]:
    return {"index": u.index, "name": u.name, "reason": u.reason}
