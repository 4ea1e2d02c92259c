"""Activation bytes of one transformer layer, counted tensor by tensor as PyTorch keeps them.

Training: what autograd saves for the backward pass (per token, plus per sample
x seq^2 for eager attention's probabilities); inference: what is alive at the
forward's largest moment. The walk follows Hugging Face's implementations:
  * RMSNorm upcasts to fp32 (`x.to(float32)`, kept by pow and mul) and multiplies
    the weight into a copy in the input dtype (kept only when the weight trains);
    LayerNorm keeps its input and fp32 mean/rstd;
  * a linear keeps its input only when its weight trains or LoRA sits on it (a
    frozen linear's input gradient needs only the weight); under autocast (AMP,
    fp32 master weights) each linear keeps its own 16-bit cast of an fp32 input;
  * RoPE keeps only cos/sin; q and k after it are kept by attention;
  * eager attention: grouped-query K/V are expanded to every head (repeat_kv),
    softmax runs in fp32 and is kept, its 16-bit cast (or dropout's output and
    mask) is kept by the second matmul; causal masks are a (seq x seq) tensor;
  * sdpa / flash: q, k, v, the output and an fp32 logsumexp per head and token;
    sdpa uses GQA natively (no expansion); o_proj reads the kernel's output itself
    (the kernel lays it out batch, seq, heads, dim: the transpose back is contiguous);
  * the activation keeps what its implementation's autograd nodes save
    (activations_fn.py): PyTorch's fused GELU or SiLU its input, GELU-tanh written in
    Python (GPT-2's, GPT-J's and Phi's gelu_new) four tensors of the MLP width; the
    gated MLP keeps those, act(gate), up and their product;
  * dropout keeps a bool mask on CUDA and the scaled noise on CPU;
  * a routed MoE token visits experts_per_token experts: the gathered input, the
    expert MLP and the weighted output each time.
"""

from __future__ import annotations

from dataclasses import dataclass

from gputui.fit.transformer.activations_fn import act_saved
from gputui.fit.transformer.activations_mamba import mamba_backward, mamba_forward, mamba_saved
from gputui.fit.transformer.config import TransformerConfig
from gputui.fit.transformer.layout import PACKED_QKV, Linear
from gputui.fit.transformer.weights import targeted
from gputui.fit.transformer.workload import Workload


@dataclass(frozen=True, slots=True)
class Acts:
    """bytes = tokens * per_token + sequences * seq^2 * per_seq_sq + seq^2 * shared_sq
    (shared_sq: a (seq x seq) tensor the whole batch shares, T5's position bias)."""

    per_token: float = 0.0
    per_seq_sq: float = 0.0
    shared_sq: float = 0.0

    def __add__(self, other: Acts) -> Acts:
        return Acts(
            self.per_token + other.per_token,
            self.per_seq_sq + other.per_seq_sq,
            self.shared_sq + other.shared_sq,
        )

    def scaled(self, n: float) -> Acts:
        return Acts(self.per_token * n, self.per_seq_sq * n, self.shared_sq * n)

    def bytes(self, batch: int, seq: int) -> float:
        return (
            batch * seq * self.per_token
            + batch * seq * seq * self.per_seq_sq
            + seq * seq * self.shared_sq
        )

    def per_sequence(self, seq: int) -> float:
        return seq * self.per_token + seq * seq * self.per_seq_sq


@dataclass(frozen=True, slots=True)
class Dtypes:
    act: int  # matmul outputs (2 under bf16/fp16/AMP, 4 in fp32)
    stream: int  # the residual stream and norm outputs (4 under AMP: fp32 weights promote)
    casts: bool  # AMP: each linear keeps its own 16-bit cast of an fp32 input
    mask: int  # dropout mask element


def dtypes(wl: Workload) -> Dtypes:
    mask = 1 if wl.backend == "cuda" else 0
    if wl.training and wl.method == "full":
        if wl.precision == "fp32":
            return Dtypes(4, 4, False, mask or 4)
        if wl.precision in ("amp_bf16", "amp_fp16"):
            return Dtypes(2, 4, True, mask or 2)
        return Dtypes(2, 2, False, mask or 2)
    a = 4 if wl.weights == "fp32" else 2
    return Dtypes(a, a, False, mask or a)


@dataclass(frozen=True, slots=True)
class LayerActs:
    saved: Acts  # kept for backward (training)
    backward_transient: tuple[Acts, ...]  # candidates for the largest extra during its backward
    forward_transient: tuple[Acts, ...]  # candidates for a no-grad forward's largest moment


def _norm_saved(cfg: TransformerConfig, width: int, d: Dtypes, weight_trains: bool) -> float:
    if cfg.norm == "rms":
        return 4 * width + (d.stream * width if weight_trains else 0)
    if cfg.norm == "none":
        return d.stream * width
    return d.stream * width + 8  # layer norm: input, fp32 mean and rstd


def _consumers_saved(width: int, consumers: list[bool], d: Dtypes) -> float:
    """A norm output read by several linears: one shared tensor, or one cast per linear (AMP)."""
    n = sum(consumers)
    if not n:
        return 0
    return n * d.act * width if d.casts else d.stream * width


def layer_acts(
    cfg: TransformerConfig, wl: Workload, linears: tuple[Linear, ...], moe: bool, tp: int = 1
) -> LayerActs:
    d = dtypes(wl)
    a = d.act
    h = cfg.hidden_size
    full = wl.training and wl.method == "full"

    def active(role: str) -> bool:
        if full:
            return True
        return any(
            targeted(lin, wl.lora_targets)
            for lin in linears
            if _canon(lin.role) == role or lin.role.endswith("_" + role)
        )

    roles = {_canon(lin.role) for lin in linears}
    q, kv, vd = cfg.q_dim / tp, (cfg.kv_dim if cfg.mla is None else cfg.q_dim) / tp, cfg.v_dim / tp
    heads = cfg.num_heads / tp
    # PyTorch's CPU sdpa has no fused kernel with dropout: training with attention dropout
    # falls back to the math path, which materializes the probabilities like eager attention
    # T5 trains as eager here: its position bias is an attn_mask that requires grad, and
    # what a fused kernel keeps for that gradient is not measured (eager is the safe side)
    eager = (
        wl.attention == "eager"
        or not cfg.fused_attention
        or (wl.backend == "cpu" and wl.training and cfg.attention_dropout > 0)
        or (cfg.encdec is not None and wl.training)
    )
    repeat = eager and cfg.mla is None and cfg.num_kv_heads < cfg.num_heads
    dropout_attn = wl.training and cfg.attention_dropout > 0
    dropout_hidden = wl.training and cfg.hidden_dropout > 0

    saved = 0.0
    # --- attention sub-block
    saved += _norm_saved(cfg, h, d, full) if cfg.norms_per_layer >= 1 else 0
    qkv_consumers = (
        ["qkv" in roles and active("qkv")]
        if "qkv" in roles
        else [active(r) for r in ("q", "k", "v") if r in roles]
    )
    if cfg.mla is not None:
        qkv_consumers = [active("q") or active("q_a"), active("kv_a")]
    saved += _consumers_saved(h, qkv_consumers, d)
    if cfg.mla is not None:
        m = cfg.mla
        ranks = (m.q_lora_rank or 0) + m.kv_lora_rank
        saved += ranks * (4 + 2 * a) + a * m.qk_rope_head_dim
    if cfg.qk_norm != "none":
        saved += 4 * (q + kv) + (a * (q + kv) if full else 0)
    saved += a * q  # q after RoPE, kept by attention
    saved += a * (q if repeat else kv) * 2  # k, v (expanded per head in eager GQA)
    sq = 0.0
    # Llama-family eager attention runs softmax in fp32 and casts back; GPT-2 and BERT
    # run it in the activation dtype
    fp32_softmax = cfg.family not in ("gpt2", "bert", "distilbert")
    if eager:
        sq += heads * (4 if fp32_softmax else a)  # the softmax output, kept by its backward
        if dropout_attn or (fp32_softmax and a < 4):
            sq += heads * a  # its cast (or dropout's output) kept by probs @ v
        if dropout_attn:
            sq += heads * d.mask
    else:
        # the kernel's output (kept by its backward and, as the same tensor, by o_proj) and
        # its fp32 logsumexp: fused kernels write the output laid out (batch, seq, heads,
        # dim), so transformers' transpose(1, 2).contiguous() before o_proj is a no-op view
        saved += a * vd + 4 * heads
    if active("o") and eager:
        saved += a * vd  # eager's probs @ v, transposed into a contiguous copy o_proj keeps
    if dropout_hidden:
        saved += d.mask * h
    if "cross_q" in roles:
        saved, sq = 2 * saved, 2 * sq  # T5's decoder: cross-attention as large as self-attention
    mamba = "mamba_in" in roles
    if mamba:  # Jamba: a Mamba mixer instead of attention (activations_mamba.py)
        saved = _norm_saved(cfg, h, d, full) + mamba_saved(cfg, wl, a, d.stream, active, tp)
        saved += d.mask * h if dropout_hidden else 0
        sq = 0.0
    # --- MLP sub-block
    if cfg.norms_per_layer >= 2 and cfg.family not in ("gptj",):
        saved += _norm_saved(cfg, h, d, full)
    inter = cfg.intermediate_size / tp
    mlp_saved, mlp_bwd = _mlp_saved(cfg, wl, d, roles, active, moe, tp)
    saved += mlp_saved
    if cfg.norms_per_layer == 4:
        saved += 2 * _norm_saved(cfg, h, d, full)  # post-norms of Gemma 2/3
    if dropout_hidden:
        saved += d.mask * h
    # --- transients
    attn_bwd = Acts(a * (2 * q + 2 * kv + vd))
    if eager:
        # the probabilities' gradient and the softmax backward's output (fp32 in Llama's path)
        attn_bwd = attn_bwd + Acts(0, heads * ((a + 8) if fp32_softmax else 2 * a))
    stream = d.stream * h
    rope = a * (q + kv) if cfg.rotary else 0.0  # q and k after RoPE
    attn_fwd = Acts(stream * 2 + a * (q + 2 * kv) + rope + a * vd)
    if eager:
        probs = ((a + 8) if a < 4 else 8) if fp32_softmax else 2 * a  # scores, (fp32 copy,) softmax
        if cfg.family == "bloom":
            # BloomAttention keeps baddbmm's raw ALiBi scores and their sum with the mask
            # (`attn_weights + attention_mask` is a new tensor): +2 per head, from the code.
            # The eager causal mask's construction (masking_utils) holds four (seq x seq)
            # tensors at its peak: a count taken from a CPU fp32 measurement (docs/fit.md),
            # not yet traced tensor by tensor in transformers' code.
            probs += 2 * a
            attn_fwd = attn_fwd + Acts(0, 4 * a)
        attn_fwd = attn_fwd + Acts(a * (2 * q if repeat else 0), heads * probs)
        if cfg.decoder:
            attn_fwd = attn_fwd + Acts(0, a)  # the causal mask, one (seq x seq) per sequence
    if cfg.encdec is not None:
        # T5 computes its position bias (1, heads, seq, seq) once per stack, for the whole
        # batch, and hands it to every layer (the decoder holds its cross-attention's zero
        # bias too). Eager adds it to the scores (counted with them); under sdpa
        # (transformers 5.25) each layer makes the kernel's float mask from it: a contiguous
        # copy (encoder) or a causal torch.where (decoder), one for the batch when nothing
        # is padded, as measured; a padded batch makes one per sequence
        held = 2 if "cross_q" in roles else 1
        attn_fwd = attn_fwd + Acts(0, 0, (held + (0 if eager else 1)) * heads * a)
    if mamba:
        attn_bwd = Acts(mamba_backward(cfg, wl, a, tp))
        attn_fwd = Acts(mamba_forward(cfg, wl, a, d.stream, tp))
    mlp_fwd = Acts(stream * 2 + _mlp_forward(cfg, a, moe, tp, inter))
    return LayerActs(Acts(saved, sq), (attn_bwd, Acts(mlp_bwd)), (attn_fwd, mlp_fwd))


def _canon(role: str) -> str:
    return "qkv" if role == PACKED_QKV else role


def _mlp_saved(
    cfg: TransformerConfig,
    wl: Workload,
    d: Dtypes,
    roles: set[str],
    active: object,
    moe: bool,
    tp: int,
) -> tuple[float, float]:
    assert callable(active)
    a = d.act
    h = cfg.hidden_size
    full = wl.training and wl.method == "full"
    inter = cfg.intermediate_size / tp
    # T5's DenseReluDense drops out its intermediate: the mask and the output wo reads
    t5_drop = (d.mask + a) * inter if cfg.encdec and wl.training and cfg.hidden_dropout else 0
    fn = act_saved(cfg.activation)
    if cfg.mlp == "plain":
        saved = _consumers_saved(h, [active("fc_in")], d) + t5_drop
        saved += fn.saved * a * inter
        if fn.keeps_output or active("fc_out"):
            saved += a * inter  # the activation's output, kept by itself or by fc_out
        return saved, 3 * a * inter
    # gated: what act(gate) keeps, then act(gate) and up, kept by their product
    gated = (fn.saved + 2) * a
    if not moe or cfg.moe is None:
        gated_in = ["gate_up"] if "gate_up" in roles else ["gate", "up"]
        saved = _consumers_saved(h, [active(r) for r in gated_in], d) + t5_drop
        saved += gated * inter + (a * inter if active("down") else 0)
        return saved, 3 * a * inter
    m = cfg.moe
    k = m.experts_per_token
    width = m.expert_intermediate / tp
    saved = _consumers_saved(h, [full or active("router")], d)
    saved += 4 * m.num_experts + a * m.num_experts  # router logits and fp32 softmax
    per_visit = (
        a * h * (1 if (full or active("gate")) else 0)
        + gated * width
        + (a * width if full or active("down") else 0)
        + a * h
    )
    saved += k * per_visit
    if m.shared_intermediate:
        sw = m.shared_intermediate / tp
        saved += (
            _consumers_saved(h, [active("gate"), active("up")], d)
            + gated * sw
            + (a * sw if active("down") else 0)
        )
        if m.shared_expert_gate:
            saved += a * h + a
    return saved, 3 * a * max(
        width, inter if m.shared_intermediate else 0.0, m.shared_intermediate / tp
    )


def _mlp_forward(cfg: TransformerConfig, a: int, moe: bool, tp: int, inter: float) -> float:
    """The MLP's largest no-grad moment: act(gate), up and their product (plain: in, out)."""
    h = cfg.hidden_size
    if cfg.mlp == "plain":
        return (
            a * h
            + 2 * a * inter
            + (2 * a * inter if cfg.activation in ("gelu_new", "gelu_fast") else 0)
            # BLOOM's no-grad GELU is Python's tanh formula written out: more temporaries
            + (4 * a * inter if cfg.activation == "gelu_bloom" else 0)
        )
    if moe and cfg.moe is not None:
        m = cfg.moe
        width = m.expert_intermediate / tp
        # experts run one after another on their share of the tokens; the output accumulates
        share = m.experts_per_token / m.num_experts
        return (
            a * h * 2
            + 3 * a * width * share * 1.0
            + a * h * share
            + 4 * m.num_experts
            + (3 * a * m.shared_intermediate / tp if m.shared_intermediate else 0)
        )
    return a * h + 3 * a * inter
