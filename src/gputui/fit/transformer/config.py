"""A transformer described by the handful of numbers that decide its memory.

Importers (HF config.json, GGUF metadata, a models TOML table) fill this in;
everything downstream (parameter layout, KV cache, activations) reads only it.
Constructing one checks it against fit.transformer.bounds, so an out-of-bounds config
cannot exist.
Field names follow Hugging Face's config keys where one exists.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from gputui.fit.transformer.bounds import ConfigError, check_config

__all__ = [
    "ConfigError",
    "EncDec",
    "EncoderHead",
    "Mamba",
    "TransformerConfig",
    "Moe",
    "Mla",
    "Quantization",
    "VisionTower",
]

Norm = Literal["rms", "layer", "layer_nobias", "none"]
Mlp = Literal["gated", "plain"]
Family = Literal[
    "gpt2",
    "gpt_neox",
    "gptj",
    "opt",
    "llama",
    "qwen2_moe",
    "gemma",
    "phi3",
    "olmo",
    "olmo2",
    "deepseek",
    "gpt_oss",
    "bert",
    "distilbert",
    "falcon",
    "bloom",
    "starcoder2",
    "phi",
    "cohere",
    "jamba",
    "t5",
    "modernbert",
]


@dataclass(frozen=True, slots=True)
class Moe:
    num_experts: int
    experts_per_token: int
    expert_intermediate: int
    shared_intermediate: int = 0  # one shared MLP of this width (0: none)
    shared_expert_gate: bool = False  # Qwen-MoE: a sigmoid gate on the shared expert
    dense_layers: tuple[int, ...] = ()  # layers that keep a dense MLP (DeepSeek's first_k_dense)
    router_bias: bool = False
    expert_bias: bool = False  # gpt-oss: biases on the fused expert matrices
    score_correction_bias: bool = False  # DeepSeek-V3's e_score_correction_bias


@dataclass(frozen=True, slots=True)
class Mla:
    """DeepSeek's multi-head latent attention: K and V come from one compressed latent."""

    q_lora_rank: int | None
    kv_lora_rank: int
    qk_nope_head_dim: int
    qk_rope_head_dim: int
    v_head_dim: int


@dataclass(frozen=True, slots=True)
class Mamba:
    """Jamba's Mamba mixers: the layers in `layers` hold one instead of attention, and keep a
    fixed-size state per sequence (conv + SSM) instead of a K/V cache that grows."""

    layers: tuple[int, ...]
    inner: int  # mamba_expand x hidden_size
    d_state: int
    d_conv: int
    dt_rank: int
    conv_bias: bool = True
    proj_bias: bool = False

    def state_bytes(self, conv_bytes: int) -> int:
        """Bytes one sequence keeps per Mamba layer: the conv window in the model's dtype
        (`conv_bytes` per value) and the SSM state, which transformers keeps in fp32."""
        return self.inner * (self.d_conv * conv_bytes + self.d_state * 4)


@dataclass(frozen=True, slots=True)
class EncDec:
    """An encoder-decoder (T5): layers 0..encoder_layers-1 are the encoder, the rest the
    decoder, whose layers add cross-attention over the encoder's output."""

    encoder_layers: int
    decoder_layers: int
    relative_buckets: int = 32  # T5's relative position bias rows (layer 0 of each stack)

    def is_decoder_layer(self, layer: int) -> bool:
        return layer >= self.encoder_layers


@dataclass(frozen=True, slots=True)
class EncoderHead:
    """The task head an encoder's `architectures` class puts on it (encoder_heads.py)."""

    architecture: str  # the class, e.g. "BertForMaskedLM"; "" when the config names none
    task: str  # "Model" (the bare encoder), "ForMaskedLM", ...; "unknown": not counted
    num_labels: int = 2  # from id2label or num_labels, as transformers reads them
    tied_decoder: bool = True  # the masked-LM decoder shares the token embedding
    dense_bias: bool = True  # the head's dense carries a bias (ModernBERT: classifier_bias)
    decoder_bias: bool = True  # the masked-LM decoder carries its own bias


@dataclass(frozen=True, slots=True)
class VisionTower:
    """A multimodal config's image encoder and projector (fit.importers.hfvision)."""

    kind: str  # the vision_config's model_type: siglip_vision_model, clip_vision_model
    hidden: int
    layers: int
    heads: int
    intermediate: int
    image_size: int
    patch: int
    channels: int
    params: int  # the tower and the projector, as transformers counts them
    tokens_per_image: int  # embeddings one image becomes in the text model's input
    activation: str = "gelu_pytorch_tanh"  # the MLP's (CLIP: quick_gelu)
    class_token: bool = False  # CLIP prepends a class embedding to the patches

    @property
    def patches(self) -> int:
        return (self.image_size // self.patch) ** 2

    @property
    def tokens(self) -> int:
        """The sequence the tower's layers run on: the patches (and CLIP's class token)."""
        return self.patches + (1 if self.class_token else 0)


@dataclass(frozen=True, slots=True)
class Quantization:
    """A checkpoint's own quantization (config.json's quantization_config)."""

    method: str  # "gptq", "awq", "bitsandbytes", "fp8", ...
    weights: str  # the weight-format name it maps to (see formats.py)
    group_size: int | None = None


@dataclass(frozen=True, slots=True)
class TransformerConfig:
    model_type: str
    family: Family
    hidden_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    intermediate_size: int
    vocab_size: int
    max_position_embeddings: int | None = None
    tie_word_embeddings: bool = False
    norm: Norm = "rms"
    mlp: Mlp = "gated"
    qkv_bias: bool = False
    o_bias: bool = False
    mlp_bias: bool = False
    qk_norm: Literal["none", "head", "full", "head_ln"] = "none"
    norms_per_layer: int = 2
    learned_positions: int = 0  # rows of a learned position table (0: rotary or none)
    token_types: int = 0  # BERT's token_type embeddings
    encoder: bool = False  # bidirectional, no generation, no KV cache
    encoder_head: EncoderHead | None = None  # None: the bare encoder with its pooler, if any
    sliding_window: int | None = None
    layer_types: tuple[str, ...] = ()  # per layer "sliding" or "full"; empty: all full
    moe: Moe | None = None
    mla: Mla | None = None
    attention_dropout: float = 0.0
    hidden_dropout: float = 0.0
    torch_dtype: str | None = None
    quantization: Quantization | None = None
    activation: str = "silu"
    warnings: tuple[str, ...] = field(default=())
    final_norm: bool = True  # OPT-350m (post-norm) has none
    # OPT-350m embeds in a smaller width and projects in and out of the blocks
    embed_dim: int | None = None
    # prepended to the key in messages: "text_config." for a multimodal config's text model
    key_prefix: str = ""
    # the families of hffamilies.py
    parallel_attn: bool = False  # attention and MLP read the same normed input (GPT-J, Phi, Falcon)
    alibi: bool = False  # ALiBi position biases (BLOOM, some Falcons): no rotary
    lm_head_bias: bool = False  # Phi's and GPT-J's lm_head carries a bias
    fused_qkv: bool = False  # one query_key_value linear of q + 2 kv outputs
    embedding_norm: bool = False  # BLOOM's word_embeddings_layernorm
    # False where transformers' attention materializes the probabilities even under sdpa:
    # BLOOM and ALiBi Falcons (their own eager code), multi-query Falcon (one K/V head
    # broadcast to all: no fused kernel takes it)
    fused_attention: bool = True
    logit_scale: bool = False  # Cohere multiplies the logits into a second tensor
    # Gemma 2's final_logit_softcapping: tanh(logits / cap) * cap, whose backward keeps
    # the tanh output, a second logits-sized tensor, until the loss's gradient reaches it
    logit_softcap: bool = False
    mamba: Mamba | None = None
    encdec: EncDec | None = None
    vision: VisionTower | None = None  # a multimodal model's image encoder and projector
    # the lower..upper parameter counts of an unknown model_type (None: the count is known)
    params_range: tuple[int, int] | None = None

    def __post_init__(self) -> None:
        """Every construction (and every `replace`) is checked: no unbounded config exists."""
        check_config(self)

    @property
    def q_dim(self) -> int:
        if self.mla is not None:
            return self.num_heads * (self.mla.qk_nope_head_dim + self.mla.qk_rope_head_dim)
        return self.num_heads * self.head_dim

    @property
    def kv_dim(self) -> int:
        return self.num_kv_heads * self.head_dim

    @property
    def v_dim(self) -> int:
        """Width of the attention output before o_proj."""
        if self.mla is not None:
            return self.num_heads * self.mla.v_head_dim
        return self.num_heads * self.head_dim

    def is_sliding(self, layer: int) -> bool:
        if self.sliding_window is None:
            return False
        if not self.layer_types:
            return True
        return self.layer_types[layer] == "sliding"

    def is_mamba_layer(self, layer: int) -> bool:
        return self.mamba is not None and layer in self.mamba.layers

    def is_moe_layer(self, layer: int) -> bool:
        return self.moe is not None and layer not in self.moe.dense_layers

    @property
    def rotary(self) -> bool:
        """Rotary positions: not a learned table, ALiBi or T5's relative bias."""
        return not self.learned_positions and not self.alibi and self.encdec is None

    @property
    def decoder(self) -> bool:
        return not self.encoder
