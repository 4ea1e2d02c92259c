"""What a transformer workload gives the timing model, and its one `Speed` on a card.

The numbers fit/transformer/step_ops.py turns into ops (the parameters a token
multiplies, the bytes a decode step reads, the GEMM shapes, the tensors an optimizer
steps) and the precision the matmuls run in; fit/core/speed.py makes the `Speed`.
"""

from __future__ import annotations

from gputui.catalog.models import Architecture, Card
from gputui.fit.core.power import TOKENS
from gputui.fit.core.roofline import ceilings
from gputui.fit.core.speed import PhaseRate, Speed, Timing, card_speed
from gputui.fit.transformer.formats import WeightFormat, weight_format
from gputui.fit.transformer.kv import kv_cache_bytes
from gputui.fit.transformer.model import TransformerModel
from gputui.fit.transformer.step_extras import step_extras
from gputui.fit.transformer.step_ops import generate_timing, train_timing
from gputui.fit.transformer.weights import block_weight_bytes, lora_params
from gputui.fit.transformer.workload import Workload

# Formats whose prompt (batch > 1 token) matmuls expand the quantized weights to 16 bit
# and call a cuBLAS GEMM: 2 bytes written and 2 read back per weight. bitsandbytes
# (nf4/fp4 and LLM.int8) dequantizes per matmul; llama.cpp (GGUF) does so for batches
# over 32 tokens on its cuBLAS path (which computes in FP16). GPTQ/AWQ kernels
# (ExLlama, Marlin; vLLM's for compressed-tensors too) and fp8/fp4 GEMMs read the packed
# weights directly: nothing extra.
DEQUANT_BYTES_PER_PARAM = 4.0


def _dequant_bytes(fmt: WeightFormat) -> float:
    if not fmt.quantized or fmt.name.startswith(("gptq", "awq", "fp8", "mxfp4", "nvfp4", "ct-")):
        return 0.0
    return DEQUANT_BYTES_PER_PARAM


def _compute_precision(model: TransformerModel, wl: Workload, fmt: WeightFormat) -> str:
    """The roofline precision the matmuls run in: a full fine-tune's precision; otherwise the
    format's compute dtype (fp8 GEMMs where the format is fp8)."""
    if wl.training and wl.method == "full":
        return {"fp32": "fp32", "amp_fp16": "fp16", "fp16": "fp16"}.get(wl.precision, "bf16")
    if fmt.tensor_key == "fp8":
        return "fp8"
    if fmt.compute == "fp32":
        return "fp32"  # PyTorch leaves TF32 off for matmuls by default
    return "fp16" if fmt.compute == "fp16" or fmt.name.startswith("gguf-") else "bf16"


def _usable_precision(card: Card, architecture: Architecture | None, first: str) -> str:
    """`first`, or the 16-bit precision the card runs on tensor cores when its hardware has
    no tensor path for `first` (bf16 on Turing, fp8 before Ada: engines fall back to
    fp16/bf16 kernels). A precision the hardware runs but whose figure the catalog lacks
    stays: its speed is unknown (fit.core.speed), never another precision's rate."""
    for name in dict.fromkeys((first, "bf16", "fp16")):
        c = ceilings(card, architecture, name)
        if c is None or c.tensor_flops is not None or name == "fp32":
            return name
    return first


def _decode_weight_bytes(model: TransformerModel, fmt: WeightFormat, batch: int) -> float:
    """Bytes one decode step reads from the weights: every block (for MoE only the experts
    the batch's tokens route to, expected over a uniform router), the LM head."""
    cfg, lay = model.config, model.layout
    k = cfg.moe.experts_per_token if cfg.moe else 0
    weights = 0.0
    for b in lay.blocks:
        wb = block_weight_bytes(b, fmt)
        if b.moe and cfg.moe:
            e = cfg.moe.num_experts
            touched = e * (1 - (1 - k / e) ** batch)
            expert = sum(
                block_weight_bytes(type(b)(1, (x,), 0), fmt) for x in b.linears if x.expert
            )
            wb -= expert * (1 - touched / e)
        weights += wb * b.count
    weights += lay.lm_head * fmt.dense_bytes + (
        lay.token_embedding * fmt.dense_bytes if cfg.tie_word_embeddings else 0
    )
    return weights


def gemm_shapes(model: TransformerModel) -> tuple[tuple[int, int, int], ...]:
    """(out, in, copies over the layers) of every dense weight matrix a token multiplies;
    routed experts are left out (each sees only its share of the tokens)."""
    shapes: dict[tuple[int, int], int] = {}
    for b in model.layout.blocks:
        for lin in b.linears:
            if not lin.expert:
                key = (lin.out_features, lin.in_features)
                shapes[key] = shapes.get(key, 0) + lin.copies * b.count
    cfg = model.config
    if not cfg.encoder:
        head = (cfg.vocab_size, cfg.hidden_size)
        shapes[head] = shapes.get(head, 0) + 1
    return tuple((o, i, n) for (o, i), n in shapes.items())


def trainable_tensors(model: TransformerModel, wl: Workload) -> int:
    """Parameter tensors the optimizer steps (a per-tensor loop launches once for each):
    every weight matrix and bias, two norms per layer, the embedding and the final norm
    (full fine-tune); LoRA's A and B per targeted matrix."""
    from gputui.fit.transformer.weights import targeted

    blocks = model.layout.blocks
    if wl.method != "full":
        return sum(
            2 * lin.copies * b.count
            for b in blocks
            for lin in b.linears
            if targeted(lin, wl.lora_targets)
        )
    mats = sum(
        lin.copies * b.count * (2 if lin.bias_params else 1) for b in blocks for lin in b.linears
    )
    return mats + 2 * model.config.num_layers + 2


def workload_speed(
    model: TransformerModel,
    wl: Workload,
    card: Card,
    batch: int,
    architecture: Architecture | None = None,
) -> Speed:
    """Rough tokens/s on `card` (fit.core.speed's policy where a figure is unknown).

    Split over GPUs, tensor parallelism divides each GPU's weights, FLOPs and cache by
    `tp`; pipeline stages run one after another for a batch (no speed-up); data-parallel
    replicas (and ZeRO/FSDP training) multiply throughput.
    """
    cfg, lay = model.config, model.layout
    fmt = weight_format(wl.weights if not (wl.training and wl.method == "full") else "bf16")
    precision = _usable_precision(card, architecture, _compute_precision(model, wl, fmt))
    k = cfg.moe.experts_per_token if cfg.moe else 0
    active = lay.active_params(k) if cfg.moe else lay.params
    if not cfg.encoder and not cfg.tie_word_embeddings:
        active -= lay.token_embedding  # a lookup, not a matmul
    tp = max(1, wl.tp) if not wl.training else 1
    replicas = max(1, wl.gpus) if wl.training else max(1, wl.gpus // (tp * max(1, wl.pp)))
    attn_pair = 4 * cfg.num_layers * cfg.q_dim
    weights = _decode_weight_bytes(model, fmt, batch)
    gguf = fmt.name.startswith("gguf-")
    # the activations' width between kernels: 16 bit, but fp32 for an fp32 model and in
    # llama.cpp, whose CUDA graph keeps hidden states in F32 between its ops
    act_bytes = 4 if precision == "fp32" or gguf else 2

    def train(c: Card) -> Timing | None:
        passes = 4 if wl.grad_checkpointing else 3
        trainable = lay.params
        if wl.method != "full":
            passes -= 1  # frozen weights need no weight gradients
            trainable = lora_params(lay, wl.lora_targets, wl.lora_rank)
        return train_timing(
            c,
            architecture,
            params=active,
            trainable_params=trainable,
            weight_bytes=int(weights),
            n_layers=cfg.num_layers,
            attention_flops_per_token_pair=attn_pair,
            seq_len=wl.seq_len,
            batch=batch,
            passes=passes,
            compute_precision=precision,
            causal=cfg.decoder,
            optimizer="sgd"
            if wl.optimizer == "sgd"
            else ("momentum" if wl.optimizer == "sgd_momentum" else "adamw"),
            grad_accum=wl.grad_accum,
            optimizer_impl=wl.optimizer_impl,
            trainable_tensors=trainable_tensors(model, wl),
            extras=step_extras(model, wl, c, act_bytes, 1),
        )

    def generate(c: Card) -> Timing | None:
        mean_ctx = wl.seq_len + max(1, wl.new_tokens) // 2 if wl.mode == "generate" else wl.seq_len
        kv_per_token = (
            kv_cache_bytes(cfg, mean_ctx, 1, wl.kv_dtype, mla_cache=wl.mla_cache, tp=tp) / mean_ctx
        )
        extras = step_extras(model, wl, c, act_bytes, tp)
        t = generate_timing(
            c,
            architecture,
            params=active // tp,
            weight_bytes=int(weights / tp),
            n_layers=cfg.num_layers,
            kv_bytes_per_token=int(kv_per_token),
            attention_flops_per_token_pair=(attn_pair if cfg.decoder else 2 * attn_pair) // tp,
            prompt_tokens=wl.seq_len,
            context_tokens=mean_ctx,
            batch=batch,
            compute_precision=precision,
            dequant_bytes_per_param=_dequant_bytes(fmt),
            accumulate16=gguf,
            gemm_shapes=tuple((o // tp, i, n) for o, i, n in gemm_shapes(model)),
            extras=extras,
        )
        if t is None or extras.link is None:
            return t
        note = f"TP {tp} all-reduces over {extras.link.basis}"
        return Timing(t.phases, t.profile, t.decode_compute_bound_batch, note)

    decodes = cfg.decoder and wl.mode == "generate"

    def timed(c: Card) -> Timing | None:
        t = train(c) if wl.training else generate(c)
        if t is None:
            return None
        phases = {
            p: PhaseRate(r.throughput * replicas, r.bound, r.step_time_s, r.bound_share)
            for p, r in t.phases.items()
            if p != "decode" or decodes
        }
        turn = t.decode_compute_bound_batch if decodes else None
        return Timing(phases, t.profile, turn, t.basis)

    acc16 = gguf and not wl.training
    return card_speed(card, architecture, precision, TOKENS, timed, accumulate16=acc16)
