"""What a transformer step does beside its weight matmuls, counted from the model.

The matmuls' bytes are the weights (and the KV cache); a step also runs memory-bound
kernels over the activations, LoRA's adapters and, split over GPUs, tensor
parallelism's all-reduces. Counted here from the config and the layout, as
fit/transformer/step_ops.py's `StepExtras`; no factor, each count is a kernel's reads
and writes in PyTorch eager (as HF transformers and PEFT run them).
"""

from __future__ import annotations

from gputui.catalog.models import Card
from gputui.fit.core.interconnect import link
from gputui.fit.transformer.model import TransformerModel
from gputui.fit.transformer.step_ops import StepExtras
from gputui.fit.transformer.weights import targeted
from gputui.fit.transformer.workload import Workload

# The backward of an elementwise kernel reads its output's gradient and its saved
# input(s) and writes its input's gradient: for the unary and binary kernels counted
# here, twice the forward's traffic.
BACKWARD_ELEMENTWISE = 2
# Tensor parallelism's all-reduces per layer in the forward (Megatron-LM, section 3):
# after attention's output projection and after the MLP.
ALL_REDUCES_PER_LAYER = 2
# The loss over the vocabulary per token, in elements of its width: the logits written
# (2 bytes) and read back for the fp32 upcast (2 + 4), log-softmax reading and writing
# fp32 (8), then backward its gradient (8) and the cast back (4 + 2): 30 bytes per
# vocabulary entry. HF causal-LM heads upcast the logits to fp32 for the loss.
LOSS_BYTES_PER_VOCAB = 30


def layer_elementwise_elements(model: TransformerModel) -> tuple[int, int]:
    """Elements one token's forward reads and writes in one layer's elementwise kernels:
    each norm reads and writes the hidden state, the rotary embedding q and k, attention
    reads q, k, v and writes its output, the MLP's activation (gated: the activation,
    then its product with the up projection), two residual adds read two and write one.
    As (on the whole hidden state: norms and residuals, which every tensor-parallel GPU
    runs whole; on the heads and MLP columns, which tensor parallelism splits)."""
    cfg = model.config
    h, q, kv = cfg.hidden_size, cfg.q_dim, cfg.kv_dim
    if cfg.moe is not None:
        ffn = cfg.moe.experts_per_token * cfg.moe.expert_intermediate
        ffn += cfg.moe.shared_intermediate
    else:
        ffn = cfg.intermediate_size
    norms = cfg.norms_per_layer * 2 * h
    rotary = 0 if cfg.learned_positions else 2 * (q + kv)
    attention = 2 * q + 2 * kv
    mlp = (5 if cfg.mlp == "gated" else 2) * ffn
    residual = 2 * 3 * h
    return norms + residual, rotary + attention + mlp


def step_extras(
    model: TransformerModel, wl: Workload, card: Card, act_bytes: int, tp: int
) -> StepExtras:
    """The workload's `StepExtras` on `card`: a training step's forward, backward (and
    recomputed forward under gradient checkpointing) with its loss and LoRA adapters; a
    forward's elementwise work and, over `tp` GPUs, its all-reduces."""
    cfg = model.config
    whole, split = layer_elementwise_elements(model)
    forward = (whole + split / tp) * cfg.num_layers * act_bytes
    if not wl.training:
        return StepExtras(
            elementwise_bytes_per_token=forward,
            all_reduces=ALL_REDUCES_PER_LAYER * cfg.num_layers if tp > 1 else 0,
            all_reduce_bytes_per_token=cfg.hidden_size * act_bytes,
            tp=tp,
            link=link(card, tp) if tp > 1 else None,
        )
    forwards = 2 if wl.grad_checkpointing else 1
    elementwise = forward * (forwards + BACKWARD_ELEMENTWISE)
    if cfg.decoder:  # a causal LM's loss over the vocabulary
        elementwise += LOSS_BYTES_PER_VOCAB * cfg.vocab_size
    if wl.method == "full":
        return StepExtras(elementwise_bytes_per_token=elementwise)
    # PEFT's LoRA linear: base(x) + lora_B(lora_A(x)) * scaling (lora_dropout 0: no
    # dropout kernel). Forward: A reads x, B writes its output, the scale reads and
    # writes it, the add reads two and writes one: in + 6 out elements, 4 kernels.
    # Backward: the scale's gradient (2 out), B's input and weight gradients (2 out), A's
    # input and weight gradients (2 in), the add into x's gradient (3 in): 4 out + 5 in,
    # 6 kernels. Gradient checkpointing runs the forward again.
    nbytes = flops = 0.0
    kernels = 0
    for block in model.layout.blocks:
        for lin in block.linears:
            if not targeted(lin, wl.lora_targets):
                continue
            # routed experts: only the experts a token is sent to run for it
            per_token = cfg.moe.experts_per_token if lin.expert and cfg.moe else lin.copies
            n = per_token * block.count
            i, o = lin.in_features, lin.out_features
            nbytes += n * (forwards * (i + 6 * o) + 4 * o + 5 * i) * act_bytes
            flops += n * 2 * wl.lora_rank * (i + o) * (forwards + 2)
            kernels += n * (4 * forwards + 6)
    return StepExtras(
        elementwise_bytes_per_token=elementwise,
        adapter_bytes_per_token=nbytes,
        adapter_flops_per_token=flops,
        adapter_kernels=kernels,
    )
