"""A transformer's facts, as JSON and as the lines that lead its text: the model (type,
parameters, attention layout) and the workload (mode, method, sequence, GPUs).

The check itself (estimates per GPU, rankings) is rendered by gputui.fit.report, with
the layer models'. Text is made visible (textsafe) where a string came from a file;
JSON carries the strings as they are (json.dumps escapes every control character).
"""

from __future__ import annotations

from typing import Any

from gputui.core.textsafe import visible
from gputui.fit.transformer.model import TransformerModel
from gputui.fit.transformer.weights import lora_params
from gputui.fit.transformer.workload import Workload
from gputui.fit.units import count

__all__ = ["count", "model_dict", "model_line", "workload_dict", "workload_line"]


def model_dict(m: TransformerModel) -> dict[str, Any]:
    c = m.config
    return {
        "name": m.name,
        "source": m.source,
        "input_kind": m.kind,
        "model_type": c.model_type,
        "params": m.params,
        "params_from": "checkpoint" if m.exact_params is not None else "config",
        "stored_bytes": m.stored_bytes,
        "stored_format": m.stored_format,
        "stored_dtypes": m.stored_dtypes or None,
        "hidden_size": c.hidden_size,
        "num_layers": c.num_layers,
        "num_heads": c.num_heads,
        "num_kv_heads": c.num_kv_heads,
        "head_dim": c.head_dim,
        "vocab_size": c.vocab_size,
        "max_position_embeddings": c.max_position_embeddings,
        "sliding_window": c.sliding_window,
        "sliding_layers": sum(c.is_sliding(i) for i in range(c.num_layers)),
        "experts": c.moe.num_experts if c.moe else None,
        "experts_per_token": c.moe.experts_per_token if c.moe else None,
        "mla_kv_lora_rank": c.mla.kv_lora_rank if c.mla else None,
        "encoder": c.encoder,
        "quantization": c.quantization.method if c.quantization else None,
    }


def workload_dict(wl: Workload, m: TransformerModel) -> dict[str, Any]:
    out: dict[str, Any] = {
        "mode": wl.mode,
        "batch_size": wl.batch_size,
        "seq_len": wl.seq_len,
        "weights": wl.weights,
        "attention": wl.attention,
        "backend": wl.backend,
        "gpus": wl.gpus,
        "parallel": wl.parallel,
        "tensor_parallel": wl.tp,
        "pipeline_parallel": wl.pp,
    }
    if wl.mode == "generate":
        out |= {
            "new_tokens": wl.new_tokens,
            "context": wl.context,
            "kv_dtype": wl.kv_dtype,
            "paged_block": wl.paged_block,
            "mla_cache": wl.mla_cache if m.config.mla else None,
            "prefill_chunk": wl.prefill_chunk,
        }
    if wl.mode == "train":
        out |= {
            "method": wl.method,
            "precision": wl.precision if wl.method == "full" else None,
            "optimizer": wl.optimizer,
            "optimizer_impl": wl.optimizer_impl,
            "grad_checkpointing": wl.grad_checkpointing,
            "grad_accum": wl.grad_accum,
        }
        if wl.method != "full":
            out |= {
                "lora_rank": wl.lora_rank,
                "lora_alpha": wl.lora_alpha,
                "lora_targets": list(wl.lora_targets),
                "trainable_params": lora_params(m.layout, wl.lora_targets, wl.lora_rank),
            }
    return out


LOOP_WORDS = {
    "plain": "plain loop (the outputs' logits held through backward and step)",
    "trainer": "Trainer loop (the outputs freed once the loss is computed)",
}
ENGINE_WORDS = {
    "hf": "transformers engine",
    "vllm": "vLLM engine (gpu_memory_utilization 0.9)",
    "llama.cpp": "llama.cpp engine (cache allocated whole)",
}


def workload_line(wl: Workload, m: TransformerModel, per_card: bool = False) -> str:
    """One line saying what the workload is (the CLI, the fleet and the TUI show it)."""
    if wl.mode == "train":
        if wl.method == "full":
            how = f"full fine-tune, {wl.precision}, {wl.optimizer}"
        else:
            n = lora_params(m.layout, wl.lora_targets, wl.lora_rank)
            how = (
                f"{'QLoRA' if wl.method == 'qlora' else 'LoRA'} r={wl.lora_rank} on "
                f"{','.join(wl.lora_targets)} ({n:,} trainable), {wl.weights} base, {wl.optimizer}"
            )
        extra = (", gradient checkpointing" if wl.grad_checkpointing else "") + (
            f", accumulate {wl.grad_accum}" if wl.grad_accum > 1 else ""
        )
        head = f"train: {how}{extra}, seq {wl.seq_len:,}, batch {wl.batch_size}, {LOOP_WORDS[wl.loop]}"
    elif wl.mode in ("inference", "eval"):
        what = (
            "inference (one forward, no labels)"
            if wl.mode == "inference"
            else "eval (one forward with labels and loss)"
        )
        head = f"{what}: {wl.weights} weights, seq {wl.seq_len:,}, batch {wl.batch_size}"
    else:
        paged = f", paged blocks of {wl.paged_block}" if wl.paged_block else ""
        head = (
            f"generate: {wl.weights} weights, prompt {wl.seq_len:,} + {wl.new_tokens:,} new tokens, "
            f"{wl.batch_size} sequence(s), KV cache {wl.kv_dtype}{paged}, {ENGINE_WORDS[wl.engine]}"
        )
    if m.kind == "gguf" or (wl.mode == "generate" and wl.engine == "llama.cpp"):
        # llama.cpp runs it: its own kernels, not PyTorch's sdpa/eager/flash
        head += ", llama.cpp attention"
    else:
        head += f", {wl.attention} attention"
    if wl.prefill_chunk and wl.mode == "generate":
        head += f", prompt in chunks of {wl.prefill_chunk:,} tokens"
    if wl.gpus > 1 and per_card:  # --all-cards without --parallel: each card's own choice
        head += f"; {wl.gpus} GPUs (per card, the cheapest strategy that fits: cards needed)"
    elif wl.gpus > 1:
        head += f"; {wl.gpus} GPUs ({wl.parallel}, TP {wl.tp} x PP {wl.pp})"
    return head


def model_line(m: TransformerModel) -> str:
    c = m.config
    bits = [visible(c.model_type), f"{m.params:,} params"]
    if c.moe:
        bits.append(f"{c.moe.num_experts} experts, {c.moe.experts_per_token} per token")
    if c.mla:
        bits.append(f"MLA latent {c.mla.kv_lora_rank}")
    if c.num_kv_heads != c.num_heads and not c.mla:
        bits.append(f"GQA {c.num_heads}/{c.num_kv_heads} heads")
    if c.sliding_window:
        n = sum(c.is_sliding(i) for i in range(c.num_layers))
        bits.append(f"sliding window {c.sliding_window:,} on {n}/{c.num_layers} layers")
    return f"model: {visible(m.name)} ({', '.join(bits)}) from {visible(m.source)}"
