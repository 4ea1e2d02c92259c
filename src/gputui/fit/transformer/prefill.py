"""The moments of generate's prefill inside the layers, with what the model's forward holds.

Each layer's no-grad moments (activations.py: its attention, its MLP) plus what
transformers' code keeps alive beside them at that point of `generate`'s prefill (a
forward with `logits_to_keep=1`, so the layers, not the logits, are its peak):
  * the embedding output, a local of the model's forward until it returns: one hidden
    state per token (GPT-2: two, `inputs_embeds` and `position_embeds` are both kept;
    Gemma keeps the scaled one);
  * GPT-2's block keeps its attention output (`attn_output`) through the MLP;
  * a fused gate_up projection (Phi-3) is one tensor of twice the MLP width, its halves
    views: alive with act(gate) and the product, one MLP width more than separate gate
    and up projections, whose outputs are freed as they are consumed.
The attention moment is named apart ("prefill, attention"): its activations hold the
q, k and v projections (for GPT-2, GPT-NeoX and Phi-3 one fused qkv output whose slices
they are) beside the cache's own copy of K and V, which the KV cache counts.
T5's prompt goes through its encoder layers only (the decoder runs one token per step).
Measured with transformers 5.24 and 5.25 on CPU (benchmarks/hf_generate_memory.py). llama.cpp (a
GGUF) runs its own graph in a compute buffer: only the layers' moments apply there.
"""

from __future__ import annotations

from gputui.fit.transformer.activations import Acts, LayerActs
from gputui.fit.transformer.model import TransformerModel

# vLLM's max_num_batched_tokens for `vllm serve` (V1): chunked prefill feeds at most this
# many prompt tokens a step, over all the sequences of the batch
VLLM_BATCHED_TOKENS = 2048


def embedding_outputs(model: TransformerModel) -> int:
    """Hidden states per token the model's forward keeps from its embedding."""
    cfg = model.config
    return 2 if cfg.family == "gpt2" and cfg.learned_positions else 1


def prefill_moments(
    model: TransformerModel,
    blocks: dict[int, LayerActs],
    embedding: bool,
    stream: int,
    act: int,
    tp: int,
) -> list[tuple[str, Acts]]:
    """(phase name, bytes per token and per seq^2) of each layer moment of the prefill.

    `blocks` maps a block index of the layout to its activations; `embedding`: this GPU
    runs the embedding (its pipeline stage is the first); `stream` and `act` are the
    residual stream's and the matmul outputs' element bytes."""
    cfg = model.config
    h = cfg.hidden_size
    hf = model.kind != "gguf"
    held = Acts(stream * h * embedding_outputs(model)) if embedding and hf else Acts()
    out: list[tuple[str, Acts]] = []
    for index, la in blocks.items():
        roles = {lin.role for lin in model.layout.blocks[index].linears}
        if "cross_q" in roles:
            continue  # T5's prompt is its encoder's: the decoder sees one token per step
        attn, mlp = la.forward_transient[0], la.forward_transient[1]
        mixer = "mamba_in" in roles
        out.append(("prefill" if mixer else "prefill, attention", held + attn))
        extra = 0.0
        if hf and cfg.family == "gpt2":
            extra += stream * h  # the block's attn_output, a local through the MLP
        if hf and "gate_up" in roles:
            extra += act * cfg.intermediate_size / tp  # the fused projection's other half
        out.append(("prefill", held + mlp + Acts(extra)))
        out.extend(("prefill", held + c) for c in la.forward_transient[2:])
    return out
