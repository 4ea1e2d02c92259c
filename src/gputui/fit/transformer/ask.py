"""A transformer's workload from what was asked, every value checked: the one validator
for an HF config, a GGUF file and a models file's `kind = "transformer"` tables, from
`gputui fit`'s flags, a table's keys (as overrides with `replace()`) or nothing at all
(the Fit screen: the same defaults as `gputui fit FILE` without flags).

A WorkloadAsk holds the flags' values by their argparse names (None: not given), so
an error still names the flag a user typed; no argparse here.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any

from gputui.core.errors import UserError
from gputui.fit.transformer.ask_bounds import check_flag_numbers
from gputui.fit.transformer.context import check_context, default_seq
from gputui.fit.transformer.formats import weight_format
from gputui.fit.transformer.kv_moments import default_kv_dtype
from gputui.fit.transformer.prefill import VLLM_BATCHED_TOKENS
from gputui.fit.transformer.weights import normalize_targets
from gputui.fit.transformer.workload import (
    DEFAULT_LORA_TARGETS,
    ENGINES,
    LOOPS,
    OPTIMIZERS,
    PAGED_BLOCK,
    Workload,
)

GGUF_PREFILL_CHUNK = 512  # llama.cpp's default n_ubatch: a GGUF prompt runs in these chunks


# The model types whose transformers class runs eager attention unless told otherwise:
# transformers 5.25's Gemma2PreTrainedModel has `_supports_sdpa = False` (its logit
# softcapping is not in the fused kernel), so `from_pretrained` gives eager, which keeps
# each layer's attention probabilities. Every other type defaults to sdpa.
EAGER_BY_DEFAULT = frozenset({"gemma2"})


def default_attention(model_type: str) -> str:
    """The attention transformers picks for `model_type` when none is asked for."""
    return "eager" if model_type in EAGER_BY_DEFAULT else "sdpa"


@dataclass(frozen=True, slots=True)
class WorkloadAsk:
    """What was asked of a transformer's workload, by the `fit` flags' names (None: unset)."""

    mode: str | None = None
    batch_size: int | None = None
    seq_len: int | None = None
    new_tokens: int | None = None
    method: str | None = None
    precision: str | None = None
    weights: str | None = None
    optimizer: str | None = None
    optimizer_impl: str | None = None
    loop: str | None = None
    engine: str | None = None
    lora_rank: int | None = None
    lora_alpha: float | None = None
    lora_targets: str | None = None
    grad_checkpointing: bool = False
    grad_accum: int | None = None
    attention: str | None = None
    kv_dtype: str | None = None
    paged: int | None = None
    mla_cache: str | None = None
    prefill_chunk: int | None = None
    gpus: int | None = None
    parallel: str | None = None
    tp: int | None = None
    pp: int | None = None
    memory_format: str | None = None
    device: str | None = None
    allow_longer_context: bool = False

    @classmethod
    def of(cls, source: Any) -> WorkloadAsk:
        """The ask from any object with these attribute names (the CLI's parsed flags)."""
        values: dict[str, Any] = {f.name: getattr(source, f.name, f.default) for f in fields(cls)}
        return cls(**values)


def build_workload(args: WorkloadAsk, model: Any, precision_default: str = "amp_bf16") -> Any:
    """The workload `args` asks for `model`, every value checked (UserError names the flag)."""

    cfg = model.config
    check_flag_numbers(args)
    if args.memory_format:
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
                  "--optimizer-impl": args.optimizer_impl, "--loop": args.loop}  # fmt: skip
    if args.grad_checkpointing:
        train_only["--grad-checkpointing"] = True
    if mode != "train":
        for flag, value in train_only.items():
            if value is not None:
                raise UserError(f"{flag}: only with --mode train (mode is {mode})")
    gen_only = {"--new-tokens": args.new_tokens, "--kv-dtype": args.kv_dtype, "--paged": args.paged,
                "--mla-cache": args.mla_cache, "--prefill-chunk": args.prefill_chunk,
                "--engine": args.engine}  # fmt: skip
    if mode != "generate":
        for flag, value in gen_only.items():
            if value is not None:
                raise UserError(f"{flag}: only with --mode generate (mode is {mode})")
    new_tokens = args.new_tokens or 256
    seq = args.seq_len or default_seq(cfg, mode, new_tokens)
    allow = args.allow_longer_context
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
    attention = args.attention or (
        "sdpa" if model.kind == "gguf" else default_attention(cfg.model_type)
    )
    loop = args.loop or "plain"
    if loop not in LOOPS:
        raise UserError(f"--loop {loop}: one of " + ", ".join(LOOPS))
    engine = args.engine or ("llama.cpp" if model.kind == "gguf" else "hf")
    if engine not in ENGINES:
        raise UserError(f"--engine {engine}: one of " + ", ".join(ENGINES))
    if engine == "hf" and model.kind == "gguf":
        raise UserError(
            "--engine hf: transformers dequantizes a GGUF file as it loads it; estimate the "
            "HF model it came from, or use --engine llama.cpp"
        )
    paged = args.paged
    chunk = args.prefill_chunk
    if mode == "generate" and engine == "vllm":
        paged = paged or PAGED_BLOCK
        # the step's tokens are shared by the batch's sequences
        chunk = chunk or max(1, -(-VLLM_BATCHED_TOKENS // (args.batch_size or 1)))
    if mode == "generate" and engine == "llama.cpp":
        chunk = chunk or GGUF_PREFILL_CHUNK
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
        optimizer=optimizer,
        optimizer_impl=args.optimizer_impl or "foreach",  # type: ignore[arg-type]
        lora_rank=rank,
        lora_alpha=args.lora_alpha or 2.0 * rank,
        lora_targets=targets,
        grad_checkpointing=bool(args.grad_checkpointing),
        grad_accum=args.grad_accum or 1,
        attention=attention,  # type: ignore[arg-type]
        kv_dtype=args.kv_dtype or default_kv_dtype(model, fmt.name),
        paged_block=paged,
        mla_cache=args.mla_cache or "latent",  # type: ignore[arg-type]
        gpus=gpus,
        parallel=parallel,  # type: ignore[arg-type]
        tp=tp,
        pp=pp,
        prefill_chunk=chunk,
        loop=loop,
        engine=engine,
        backend=args.device or "cuda",  # type: ignore[arg-type]
    )
    return replace(wl)


def auto_parallel(args: WorkloadAsk) -> bool:
    """No --parallel, --tp or --pp with --gpus 2 or more: run() picks the cheapest strategy
    that fits (fit.transformer.parallel_choice)."""
    given = (getattr(args, f, None) is not None for f in ("parallel", "tp", "pp"))
    return (getattr(args, "gpus", None) or 1) > 1 and not any(given)
