"""Pydantic mirror of the `gputui fit --json` document (schema_version 3), for validation
and the JSON Schema shipped as docs/fit-schema.json.

Only the tests and `python -m gputui.fit.report.schema` import it (pydantic costs an
import the CLI does not pay). Every model forbids extra keys, and the tests validate
real outputs of every model kind against it, so the documented schema cannot drift.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Verdict = Literal["fits", "tight", "does not fit"]
Bound = Literal["compute", "memory", "launch"]


class _Strict(BaseModel):
    # protected_namespaces=(): the document has a `model_type` field (pydantic 2.0 refuses
    # a field named model_*, later versions warn)
    model_config = ConfigDict(extra="forbid", protected_namespaces=())


class Mig(_Strict):
    profile: str | None = Field(description='e.g. "3g.40gb"')
    gpu_instance_id: int | None
    compute_instance_id: int | None
    mig_index: int | None
    uuid: str | None


class Gpu(_Strict):
    """A GPU checked against: a catalog card (index null) or an installed GPU / MIG instance."""

    name: str
    index: int | None = Field(description="NVML index; null for a catalog card")
    catalog_card: str | None
    architecture: str | None
    compute_capability: str | None
    memory_total_bytes: int
    memory_free_bytes: int | None = Field(description="installed GPUs only")
    mig: Mig | None


class Unavailable(_Strict):
    index: int
    name: str
    reason: str


class Breakdown(_Strict):
    """Bytes at the peak, by what holds them; they sum to peak_bytes."""

    weights: int
    gradients: int
    optimizer_state: int
    activations: int
    kv_cache: int | None = Field(None, description="transformers only")
    workspace: int
    cuda_context: int
    allocator: int


class LayerBound(_Strict):
    network: str
    index: int
    layer: str
    bound: Bound
    seconds: float


class _UnknownSpeed(_Strict):
    """Where the card lacks a figure the speed needs (fit.core.speed): why, and each
    phase's throughput at a rate the card is sure to reach."""

    unknown_reason: str | None
    floor: dict[str, float] = Field(description="phase -> throughput at the floor rate")
    floor_basis: str | None


class GraphSpeed(_UnknownSpeed):
    """A layer model's rough step time (fit.core.roofline); null figures where unknown."""

    step_time_s: float | None
    samples_per_s: float | None
    peak_tflops_used: float | None
    bound: Bound | None
    time_share_by_bound: dict[str, float] | None
    layer_bounds: list[LayerBound] | None


class TransformerSpeed(_UnknownSpeed):
    rough: Literal[True]
    model: Literal["roofline"]
    decode_tokens_per_s: float | None
    prefill_tokens_per_s: float | None
    train_tokens_per_s: float | None
    decode_bound: Bound | None
    prefill_bound: Bound | None
    train_bound: Bound | None
    decode_compute_bound_batch: int | None
    compute_precision: str
    basis: str
    tflops_used: float | None
    bandwidth_gbs: float | None
    efficiency_assumed: dict[str, float]
    launch_overhead_s: float


class _Answer(_Strict):
    """What every estimate says, whatever the model's kind."""

    peak_bytes: int
    tensor_bytes: int
    peak_phase: str
    limit_bytes: int
    fits: bool
    verdict: Verdict
    max_batch_size: int
    free_bytes: int | None
    verdict_free: Verdict | None
    max_batch_size_free: int | None
    breakdown: Breakdown


class PrecisionRow(_Answer):
    """A layer model in one precision on one GPU."""

    precision: str
    offered: bool
    reason: str
    batch_size: int
    max_batch_size_pow2: int
    max_batch_size_free_pow2: int | None
    speed: GraphSpeed | None


class PeakTensor(_Strict):
    layer: str
    what: str
    bytes: int


class GraphEstimate(PrecisionRow):
    """A layer model on one GPU: the chosen precision's row, and every row."""

    gpu: Gpu
    warnings: list[str]
    recommended_precision: str
    recommendation_reason: str
    peak_tensors: list[PeakTensor]
    precisions: list[PrecisionRow]


class TransformerEstimate(_Answer):
    gpu: Gpu
    longest_seq_len: int
    longest_context: int
    longest_capped_by_model: bool
    longest_at_search_limit: bool
    longest_seq_len_free: int | None
    speed: TransformerSpeed | None
    warnings: list[str]


class LayerRow(_Strict):
    name: str | None = None
    inputs: list[str] | None = None
    index: int
    type: str
    output_shape: list[int | None]
    params: int
    trainable_params: int
    non_trainable_params: int
    flops: int | float
    saved_elements_per_sample: int
    saved_bytes_per_sample_fp32: int


class GraphModel(_Strict):
    type: str = Field(description="sequential, functional, gan, ... (the models file's kind)")
    params: int
    trainable_params: int
    non_trainable_params: int
    flops_per_sample: int | float
    warnings: list[str]
    layers: list[LayerRow] | None = Field(None, description="not with --all-cards")
    generator_layers: list[LayerRow] | None = None
    discriminator_layers: list[LayerRow] | None = None


class Software(_Strict):
    memory_format: str
    optimizer_impl: str | None


class GraphWorkload(_Strict):
    mode: Literal["train", "inference", "eval"]
    batch_size: int
    optimizer: str
    backend: Literal["cuda", "cpu"]
    software: Software


class Assumptions(_Strict):
    """What an estimate assumed beyond its file: the runtime (fit.graph.runtime; a
    transformer is run by Hugging Face transformers on PyTorch), and for a transformer the
    training loop (train) or the serving engine (generate)."""

    runtime: Literal["pytorch", "keras-torch", "keras-tensorflow", "keras-jax"] = Field(
        description="what runs the model: PyTorch eager, or Keras 3 on a backend"
    )
    runtime_source: str = Field(
        description="why: --runtime, the model table's runtime, KERAS_BACKEND, keras.json, "
        "Keras' default backend, or a models-TOML layer table's default (pytorch)"
    )
    runtime_modelled: bool = Field(
        description="false: the estimate is PyTorch-style, this runtime is not modelled"
    )
    runtime_note: str | None = Field(description="the line saying so when it is not modelled")
    loop: Literal["plain", "trainer"] | None = Field(
        None, description="train: who holds the outputs through the backward and the step"
    )
    engine: Literal["hf", "vllm", "llama.cpp"] | None = Field(
        None, description="generate: the serving engine"
    )


class TransformerModel(_Strict):
    name: str
    source: str
    input_kind: str
    model_type: str
    params: int
    params_from: Literal["checkpoint", "config"]
    stored_bytes: int | None
    stored_format: str | None
    stored_dtypes: dict[str, Any] | list[str] | None
    hidden_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    vocab_size: int
    max_position_embeddings: int | None
    sliding_window: int | None
    sliding_layers: int
    experts: int | None
    experts_per_token: int | None
    mla_kv_lora_rank: int | None
    encoder: bool
    quantization: str | None



class TransformerWorkload(_Strict):
    """generate adds the decode fields, train the method's; each is absent otherwise."""

    mode: Literal["train", "inference", "eval", "generate"]
    batch_size: int
    seq_len: int
    weights: str
    attention: str
    backend: Literal["cuda", "cpu"]
    gpus: int
    parallel: str
    tensor_parallel: int
    pipeline_parallel: int
    new_tokens: int | None = None
    context: int | None = None
    kv_dtype: str | None = None
    paged_block: int | None = None
    mla_cache: str | None = None
    prefill_chunk: int | None = None
    method: str | None = None
    precision: str | None = None
    optimizer: str | None = None
    optimizer_impl: str | None = None
    grad_checkpointing: bool | None = None
    grad_accum: int | None = None
    lora_rank: int | None = None
    lora_alpha: float | None = None
    lora_targets: list[str] | None = None
    trainable_params: int | None = None


class Tried(_Strict):
    parallel: str
    peak_bytes: int


class ParallelChoice(_Strict):
    parallel: str
    chosen_by: str
    fits: bool
    reason: str
    tried: list[Tried]


class RankRow(_Strict):
    """One catalog card, the model at its best there: the same keys for every kind
    (null where a kind does not know a figure), the kind's own in `kind_facts`."""

    rank: int
    card: str
    precision: str | None
    memory_bytes: int
    peak_bytes: int
    verdict: Verdict
    fits: bool
    max_batch_size: int
    longest_seq_len: int | None = Field(description="null for a kind with no sequence")
    longest_context: int | None
    throughput: float | None = Field(description="the roofline's figure; null: unknown")
    throughput_unit: Literal["samples/s", "tokens/s"]
    throughput_phase: Literal["step", "decode", "prefill", "train"]
    throughput_floor: float | None = Field(
        description="a rate an unknown card is sure to reach, that placed it"
    )
    bound: Bound | str | None
    speed_basis: str | None
    speed_figure_derived: bool | None
    speed_unknown_reason: str | None
    cards_needed: int | None = Field(description="null: not counted, or more than 64")
    cards_split: str | None
    launch_price_usd: float | None
    throughput_per_1000_usd: float | None
    third_party_figures: list[str] = Field(
        description="the card's catalog figures taken from a named third party, not NVIDIA"
    )
    power_limit_w: float | None
    throughput_per_watt: float | None
    budget: Literal["within", "price unknown"] | None = Field(
        description="with --budget: the launch price is within it, or none was published "
        "(those rows follow the priced ones); null without --budget"
    )
    energy_at_power_limit: float | None
    energy_unit: Literal["J per 1,000 samples", "Wh per 1M tokens"]
    kind_facts: dict[str, Any] = Field(
        description="a layer model: time_share_by_bound; a transformer: "
        "decode_compute_bound_batch, parallel"
    )


class SpeedAssumed(_Strict):
    """What every kind's speed assumes; the kind's own in `kind_facts`."""

    model: Literal["roofline"]
    efficiency_assumed: dict[str, float] = Field(description="per op class, of peak")
    launch_overhead_s: float = Field(description="per kernel")
    kind_facts: dict[str, Any] = Field(
        description="what only one kind's speed assumes (none today: both kinds time their "
        "ops on the one roofline, fit.core.speed)"
    )


class _Entry(_Strict):
    name: str
    mig_advice: list[str] = Field(description="MIG GPUs where it fits no instance now")


class GraphEntry(_Entry):
    """A layer model (a layer list, a graph, a GAN, a Keras file)."""

    kind: Literal["graph"]
    model: GraphModel
    workload: GraphWorkload
    assumptions: Assumptions
    parallel_choice: None
    speed_assumed: SpeedAssumed
    estimates: list[GraphEstimate] | None = Field(description="one per GPU; null with --all-cards")
    ranking: list[RankRow] | None = Field(description="--all-cards only")


class TransformerEntry(_Entry):
    """A transformer (an HF config or folder, a GGUF file, a kind = "transformer" table)."""

    kind: Literal["transformer"]
    model: TransformerModel
    workload: TransformerWorkload | None = Field(description="null when no GPU could be checked")
    assumptions: Assumptions
    parallel_choice: ParallelChoice | None
    speed_assumed: SpeedAssumed
    estimates: list[TransformerEstimate] | None = Field(
        description="one per GPU; null with --all-cards"
    )
    ranking: list[RankRow] | None = Field(description="--all-cards only")


class ObservedHistory(_Strict):
    """What `gputui fit --against` kept about jobs on this card (docs/record.md)."""

    card: str
    jobs: int = Field(description="comparisons kept for this card")
    median_ratio: float = Field(description="observed NVML peak / estimate, the median")
    frameworks: list[str] = Field(description='as named by the jobs\' command lines, or "unknown"')


class FitDocument(_Strict):
    schema_version: Literal[3]
    mode: Literal["check", "all-cards"]
    models_file: str | None = Field(description="as given; null for --hf ORG/NAME")
    models_file_origin: str | None
    backend: Literal["cuda", "cpu"]
    gpus: list[Gpu] = Field(description="the GPUs checked; [] with --all-cards")
    unavailable_gpus: list[Unavailable]
    all_fit: bool
    models: list[Annotated[GraphEntry | TransformerEntry, Field(discriminator="kind")]]
    observed_history: list[ObservedHistory] | None = Field(
        None, description="only when `fit --against` kept comparisons on a card checked"
    )


def json_schema() -> dict[str, Any]:
    schema = FitDocument.model_json_schema()
    schema["title"] = "gputui fit --json"
    return schema


if __name__ == "__main__":  # python -m gputui.fit.report.schema > docs/fit-schema.json
    print(json.dumps(json_schema(), indent=2))
