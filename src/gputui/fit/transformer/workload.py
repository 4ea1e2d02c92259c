"""What the user wants to do with the model: train (full, LoRA, QLoRA), one forward without
labels (inference) or with labels and loss (eval), or generate.

A plain frozen dataclass: the CLI and the models TOML validate their strings
into it; the memory model reads only it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from gputui.fit.core.overheads import Backend
from gputui.fit.core.software import OptimizerImpl

Mode = Literal["train", "inference", "eval", "generate"]
Method = Literal["full", "lora", "qlora"]
Attention = Literal["sdpa", "eager", "flash"]
Parallel = Literal["none", "tp", "pp", "ddp", "zero1", "zero2", "zero3", "fsdp"]
Optimizer = Literal["adamw", "adamw_8bit", "sgd", "sgd_momentum"]
TrainPrecision = Literal["fp32", "amp_bf16", "amp_fp16", "bf16", "fp16"]
MlaCache = Literal["latent", "expanded"]
# Which training loop holds the model's outputs: "plain" is the loop PyTorch and HF's own
# examples write (`out = model(**batch); out.loss.backward(); opt.step()`): `out` and its
# logits stay referenced through the backward and the optimizer step; "trainer" is the HF
# Trainer's (and any loop that keeps only `loss`): the outputs die once the loss is computed.
Loop = Literal["plain", "trainer"]
# Which serving engine runs `generate`: transformers' full prefill and growing cache, vLLM's
# paged pool sized by gpu_memory_utilization, or llama.cpp's batched prefill (ask.py).
Engine = Literal["hf", "vllm", "llama.cpp"]


MODES: tuple[Mode, ...] = ("train", "inference", "eval", "generate")
LOOPS: tuple[Loop, ...] = ("plain", "trainer")
ENGINES: tuple[Engine, ...] = ("hf", "vllm", "llama.cpp")
ATTENTIONS: tuple[Attention, ...] = ("sdpa", "eager", "flash")
PARALLELS: tuple[Parallel, ...] = ("none", "tp", "pp", "ddp", "zero1", "zero2", "zero3", "fsdp")
OPTIMIZERS: tuple[Optimizer, ...] = ("adamw", "adamw_8bit", "sgd", "sgd_momentum")
TRAIN_PRECISIONS: tuple[TrainPrecision, ...] = ("fp32", "amp_bf16", "amp_fp16", "bf16", "fp16")
TRAIN_PARALLELS = ("ddp", "zero1", "zero2", "zero3", "fsdp")
DEFAULT_LORA_TARGETS = ("q", "k", "v", "o")
PAGED_BLOCK = 16  # vLLM's default KV block size in tokens


@dataclass(frozen=True, slots=True)
class Workload:
    mode: Mode = "generate"
    batch_size: int = 1
    seq_len: int = 2048
    new_tokens: int = 256  # generate only
    method: Method = "full"  # train only
    precision: TrainPrecision = "amp_bf16"  # full fine-tune only
    weights: str = "bf16"  # base weights as stored on the GPU (formats.WEIGHT_FORMATS)
    optimizer: Optimizer = "adamw"
    optimizer_impl: OptimizerImpl = "foreach"  # its kernels (fit.core.software); fused: no temporary
    loop: Loop = "plain"  # train only: who holds the outputs through backward and step
    engine: Engine = "hf"  # generate only
    lora_rank: int = 16
    lora_alpha: float = 32.0  # scales the update; no memory effect, kept for the report
    lora_targets: tuple[str, ...] = DEFAULT_LORA_TARGETS
    grad_checkpointing: bool = False
    grad_accum: int = 1
    attention: Attention = "sdpa"
    kv_dtype: str = "fp16"
    paged_block: int | None = None  # tokens per KV block (None: a contiguous cache)
    mla_cache: MlaCache = "latent"
    gpus: int = 1
    parallel: Parallel = "none"
    tp: int = 1  # tensor-parallel size (tp * pp <= gpus; the rest is data parallel)
    pp: int = 1
    prefill_chunk: int | None = None  # llama.cpp's n_ubatch: the prompt in chunks of this many
    backend: Backend = "cuda"

    @property
    def training(self) -> bool:
        return self.mode == "train"

    @property
    def context(self) -> int:
        """Tokens the KV cache holds at the end (prompt + generated)."""
        return self.seq_len + (self.new_tokens if self.mode == "generate" else 0)
