"""`gputui fit`'s command line: every flag, for layer models and transformers alike.

Import-light (only fit.core.software's choices and the precision names) so `gputui --help` and the parser pay
for no estimator; the modules that run the check import from here, never the other way.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from gputui.fit import MEMORY_FORMAT_CHOICES, OPTIMIZER_IMPLS, PRECISIONS, RUNTIMES

PRECISION_CHOICES = PRECISIONS


# One --mode/--optimizer for both estimators: "generate", adamw_8bit and sgd_momentum are for
# transformers (transformer_workload.py), momentum/rmsprop/adam for layer models; each path
# refuses the other's values with a line saying so.
MODE_CHOICES = ("train", "inference", "eval", "generate")
OPTIMIZER_CHOICES = ("sgd", "momentum", "rmsprop", "adam", "adamw", "adamw_8bit", "sgd_momentum")
LAYER_OPTIMIZERS = ("sgd", "momentum", "rmsprop", "adam", "adamw")
DEVICE_CHOICES = ("cuda", "cpu")
# Exit status when the models fit where they could be checked but an installed GPU that was
# asked about could not be read: the question was answered only in part.
EXIT_PARTIAL = 3

# a transformer's choices (transformer_workload.py checks them)
MODES = ("train", "inference", "eval", "generate")
METHODS = ("full", "lora", "qlora")
ATTENTIONS = ("sdpa", "eager", "flash")
PARALLELS = ("tp", "pp", "ddp", "zero1", "zero2", "zero3", "fsdp")
OPTIMIZERS = ("adamw", "adamw_8bit", "sgd", "sgd_momentum")
KV_DTYPES = ("fp16", "bf16", "fp32", "fp8", "int8", "q8_0", "q4_0")
LOOPS = ("plain", "trainer")
ENGINES = ("hf", "vllm", "llama.cpp")


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
    "loop",
    "engine",
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The fit arguments (kept apart so another model source can add its own next to them)."""
    p.add_argument("models", nargs="?", type=Path, metavar="MODELS")
    where = p.add_mutually_exclusive_group()
    where.add_argument(
        "--gpu", metavar="NAME", help="check against a catalog card (e.g. 'RTX 3090')"
    )
    where.add_argument(
        "--index", type=int, metavar="N", help="only the installed GPU with NVML index N"
    )
    where.add_argument(
        "--all-cards", action="store_true", help="rank every catalog card for each model"
    )
    where.add_argument(
        "--prometheus", metavar="URL", help="rank the cluster's GPUs (free memory from Prometheus)"
    )
    p.add_argument("--match", metavar="SELECTOR", help="with --prometheus: only these series")
    p.add_argument(
        "--deadline",
        metavar="SECONDS",
        help="with --prometheus: the time all the queries of the command may take together "
        "(default 60)",
    )
    p.add_argument(
        "--all",
        action="store_true",
        help="with --prometheus: list every GPU (default: the groups and the best 10)",
    )
    p.add_argument(
        "--batch-size",
        type=int,
        metavar="N",
        help="override each model's batch_size (with --all-cards: the batch cards are ranked at)",
    )
    p.add_argument(
        "--budget",
        metavar="USD",
        help="with --all-cards: rank only cards whose launch price is within USD; cards "
        "without a published price are listed after them",
    )
    p.add_argument("--precision", choices=PRECISION_CHOICES, help="only this precision")
    p.add_argument("--optimizer", choices=OPTIMIZER_CHOICES, help="override each model's optimizer")
    p.add_argument(
        "--mode",
        choices=MODE_CHOICES,
        help="override each model's mode: train, inference (a forward without labels), eval "
        "(the forward with labels and loss), generate (transformers)",
    )
    p.add_argument(
        "--memory-format",
        choices=MEMORY_FORMAT_CHOICES,
        help="override each layer model's memory_format: the tensor layout the speed assumes "
        "(channels_first = NCHW, PyTorch's default, also contiguous_format; channels_last = "
        "NHWC, model.to(memory_format=torch.channels_last): no layout transposes around "
        "tensor-core convolutions)",
    )
    p.add_argument(
        "--optimizer-impl",
        choices=OPTIMIZER_IMPLS,
        help="override each model's optimizer_impl: the optimizer kernels a training step's "
        "speed assumes (foreach, PyTorch's default; fused: fused=True or apex FusedAdam; "
        "loop: foreach=False)",
    )
    p.add_argument(
        "--runtime",
        choices=RUNTIMES,
        help="override each layer model's runtime: what runs it, and so what stays alive "
        "(pytorch, a models TOML's default; keras-torch, keras-tensorflow, keras-jax: Keras 3 "
        "on that backend, a Keras file's default being the backend Keras is configured with "
        "here; the Keras TensorFlow and JAX runtimes are not modelled and say so)",
    )
    p.add_argument(
        "--device",
        choices=DEVICE_CHOICES,
        default="cuda",
        help="whose allocator behaviour to model: cuda (default) or cpu, to compare with a "
        "CPU measurement (calibration aid; no CUDA context or allocator slack)",
    )
    p.add_argument("--model", action="append", metavar="NAME", help="only this model (repeatable)")
    p.add_argument(
        "--input-shape",
        action="append",
        metavar="NAME=D,D",
        help="per-sample shape of a Keras model input Keras leaves variable (repeatable); "
        "with --torch: one input of a sample, D,D[:dtype] (repeatable, in argument order)",
    )
    p.add_argument(
        "--skip-unknown",
        action="store_true",
        help="treat unknown (custom) Keras layers as identity, with a warning",
    )
    t = p.add_argument_group("PyTorch modules (the user's code runs: it is traced on fake tensors)")
    t.add_argument(
        "--torch",
        metavar="FILE.py:FACTORY",
        help="trace the nn.Module FACTORY() returns (FILE.py:NAME or package.module:NAME; "
        "needs pip install 'gputui[torch]'); one batch: --inputs or --input-shape D,D[:dtype]",
    )
    t.add_argument(
        "--inputs",
        metavar="FILE.py:CALLABLE",
        help="with --torch: CALLABLE(batch) returns one batch (a tensor, a tuple of positional "
        "arguments or a dict of keyword arguments)",
    )
    t.add_argument(
        "--loss",
        metavar="FILE.py:CALLABLE",
        help="with --torch: CALLABLE(output, batch) returns the scalar loss (default: the "
        "output's .loss, else the sum of the outputs)",
    )
    p.add_argument("--layers", action="store_true", help="also print the per-layer table")
    p.add_argument("--json", action="store_true", help="print JSON (schema in docs/fit.md)")
    p.add_argument(
        "--against",
        type=Path,
        metavar="RECORDING",
        help="set each model's estimate beside the observed peak of --pid in this recording "
        "(docs/record.md)",
    )
    p.add_argument("--pid", metavar="PID", help="with --against: the process to compare with")
    add_transformer_arguments(p)  # transformers / LLMs (docs/fit.md, second part)


def add_transformer_arguments(p: argparse.ArgumentParser) -> None:
    """The transformer-only flags; --mode, --optimizer and --device are `gputui fit`'s own
    (add_arguments above), shared with layer models and checked here against MODES/OPTIMIZERS."""
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
    g.add_argument(
        "--kv-dtype",
        choices=KV_DTYPES,
        help="KV-cache element type (default: fp32 with fp32 weights, as transformers "
        "writes it, else fp16)",
    )
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
        "--loop",
        choices=LOOPS,
        help="train: who holds the model's outputs. plain (default): `out = model(**batch); "
        "out.loss.backward(); opt.step()` keeps the logits through the backward and the step; "
        "trainer: the HF Trainer (or `loss = model(**batch).loss`) frees them after the loss",
    )
    g.add_argument(
        "--engine",
        choices=ENGINES,
        help="generate: the serving engine. hf (default; llama.cpp for a GGUF): transformers' "
        "full prefill and growing cache; vllm: paged KV in blocks of 16, chunked prefill, "
        "gpu_memory_utilization 0.9; llama.cpp: the prompt in batches of 512, the cache "
        "allocated whole",
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


# A budget above this is no budget a GPU catalog answers (the dearest card is under $100k).
MAX_BUDGET_USD = 1e9


def budget_usd(args: argparse.Namespace) -> float | None:
    """--budget as a number of dollars, bounded; None when not given."""
    from gputui.core.errors import UserError
    from gputui.core.textsafe import visible

    text = getattr(args, "budget", None)
    if text is None:
        return None
    try:
        value = float(str(text).replace(",", "").removeprefix("$"))
    except ValueError:
        value = float("nan")
    if not 0 < value <= MAX_BUDGET_USD:  # also refuses nan and inf
        raise UserError(
            f"--budget: a price in USD between 0 and {MAX_BUDGET_USD:,.0f}, "
            f"got {visible(str(text))!r}"
        )
    if not getattr(args, "all_cards", False):
        raise UserError("--budget: it ranks catalog cards; use it with --all-cards")
    return value


def batch_source(args: argparse.Namespace, own: str) -> str:
    """Where the batch a ranking is at came from: --batch-size, or `own` (the model's)."""
    return "--batch-size" if getattr(args, "batch_size", None) is not None else own
