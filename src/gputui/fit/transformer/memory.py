"""Peak memory of a transformer workload on one GPU, as moments (phases) of the step.

Each phase is bytes = fixed + batch x per-sequence(seq), split into the breakdown
the fit checker reports (weights, gradients, optimizer_state, activations,
kv_cache, workspace). The peak is the largest phase; the largest batch is solved
exactly (every phase is affine in the batch) and the longest context searched
(phases grow monotonically with it).

Training walks one step the way PyTorch runs it: the forward keeps what autograd
saves in every layer (activations.py); the loss upcasts the logits to fp32 and
its backward holds the log-softmax output, its gradient and the input gradient
together (the usual peak of models with large vocabularies); the backward then
frees saved tensors layer by layer while gradients appear; the optimizer step
holds all gradients, the state and its temporaries. With gradient checkpointing
only each layer's input is kept and one layer is recomputed at a time.

Generation: the prompt's forward (prefill) with a KV cache for the prompt, then
decode steps until the cache holds prompt + new - 1 tokens (transformers never feeds
the last one back); a contiguous cache grows by concatenation, so one layer's K is
briefly there twice (what the cache holds at each moment: kv_moments.py).

Multi-GPU: each GPU's share (see the multi-GPU notes in docs/fit.md): tensor
parallel splits the linears, vocab and kv heads; pipeline parallel splits the
layers (the first stage also keeps activations of every micro-batch in flight);
ZeRO/FSDP shard the model states with DeepSpeed's formulas plus the gathered
layer and buckets they leave out.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from gputui.fit.core.breakdown import Parts
from gputui.fit.transformer.activations import Acts, LayerActs, dtypes, layer_acts
from gputui.fit.transformer.config import TransformerConfig
from gputui.fit.transformer.encoder_heads import vocab_head
from gputui.fit.transformer.formats import WeightFormat, weight_format
from gputui.fit.transformer.head import encoder_logits, head_acts
from gputui.fit.transformer.kv_moments import Moment, cache_bytes
from gputui.fit.transformer.model import TransformerModel
from gputui.fit.transformer.prefill import prefill_moments
from gputui.fit.transformer.vision import tower_forward_bytes
from gputui.fit.transformer.weights import lora_params_block, weight_bytes
from gputui.fit.transformer.workload import Workload


@dataclass(frozen=True, slots=True)
class SeqPhase:
    """A moment of the step as a recipe in the batch and the sequence length.

    bytes = fixed + batch * (acts(seq) + work(seq)) + KV cache of batch sequences."""

    name: str
    fixed: Parts
    acts: Acts = Acts()
    work: Acts = Acts()
    kv: Moment | None = None  # the cache at the prefill ("prompt") or the last decode step
    kv_concat: bool = False  # + one layer's K while a contiguous cache is grown
    chunk: int | None = None  # prefill in chunks of this many tokens (attention to all seq)
    per_seq_const: float = 0  # bytes per sequence whatever its length (last-token logits)


@dataclass(frozen=True, slots=True)
class Stage:
    """What one GPU holds: a run of layers and possibly the embedding and the head."""

    name: str
    layers: tuple[int, ...]  # layer indices
    embedding: bool
    head: bool
    inflight: int = 1  # pipeline micro-batches whose activations it keeps


def _per_seq(acts: Acts, seq: int, chunk: int | None) -> float:
    if chunk is not None and chunk < seq:
        return float(chunk * acts.per_token + chunk * seq * acts.per_seq_sq)
    return acts.per_sequence(seq)


@dataclass(frozen=True, slots=True)
class StageMemory:
    stage: Stage
    phases: tuple[SeqPhase, ...]
    model: TransformerModel
    workload: Workload
    tp: int

    def kv_bytes(
        self, batch: int, seq: int, moment: Moment, concat: bool = False
    ) -> tuple[float, float]:
        """(the cache, a contiguous cache's growth extra) on this GPU (kv_moments.py)."""
        layers = self.stage.layers
        if not layers:
            return 0.0, 0.0
        span = range(layers[0], layers[-1] + 1)
        return cache_bytes(self.model, self.workload, span, self.tp, batch, seq, moment, concat)

    def parts(self, phase: SeqPhase, batch: int, seq: int) -> Parts:
        p = phase.fixed + Parts(
            activations=batch * (_per_seq(phase.acts, seq, phase.chunk) + phase.per_seq_const)
            + seq * seq * phase.acts.shared_sq,
            workspace=batch * _per_seq(phase.work, seq, phase.chunk),
        )
        if phase.kv:
            kv, extra = self.kv_bytes(batch, seq, phase.kv, phase.kv_concat)
            p = p + Parts(kv_cache=kv, workspace=extra)
        return p


def _train_format(wl: Workload) -> WeightFormat:
    if wl.method == "full":
        if wl.parallel in ("zero1", "zero2", "zero3") and wl.precision.startswith("amp"):
            return weight_format("bf16" if wl.precision == "amp_bf16" else "fp16")
        return weight_format(
            {
                "fp32": "fp32",
                "amp_bf16": "fp32",
                "amp_fp16": "fp32",
                "bf16": "bf16",
                "fp16": "fp16",
            }[wl.precision]
        )
    return weight_format(wl.weights)


def _state_bytes(wl: Workload) -> tuple[float, float]:
    """(optimizer state, gradient) bytes per trainable parameter."""
    if wl.method != "full":
        grad = 4.0  # LoRA adapters train in fp32 (PEFT's autocast_adapter_dtype)
        low = False
    else:
        low = wl.precision in ("bf16", "fp16")
        grad = 2.0 if low else 4.0
    elem = 2.0 if low else 4.0
    state = {
        "adamw": 2 * elem,
        "adamw_8bit": 2 * (1 + 4 / 256),  # uint8 m and v, an fp32 absmax per 256
        "sgd": 0.0,
        "sgd_momentum": elem,
    }[wl.optimizer]
    if (
        wl.method == "full"
        and wl.parallel in ("zero1", "zero2", "zero3")
        and wl.precision.startswith("amp")
    ):
        state += 4  # DeepSpeed keeps the fp32 master copy with the optimizer state
        grad = 2.0
    return state, grad


def stages(model: TransformerModel, wl: Workload) -> list[Stage]:
    n = model.config.num_layers
    pp = wl.pp
    if pp <= 1:
        return [Stage("all layers", tuple(range(n)), True, True)]
    per = math.ceil(n / pp)
    out = []
    for s in range(pp):
        layers = tuple(range(s * per, min(n, (s + 1) * per)))
        if not layers and s not in (0, pp - 1):
            continue
        inflight = min(pp - s, wl.grad_accum) if wl.training else 1
        out.append(Stage(f"pipeline stage {s}", layers, s == 0, s == pp - 1, max(1, inflight)))
    return out


def _block_of(model: TransformerModel, layer: int) -> int:
    """Index into layout.blocks for a layer (dense blocks first, as the layout lists them)."""
    cfg = model.config
    blocks = model.layout.blocks
    if model.layout.layer_blocks:  # Jamba, T5: layers of several kinds (layout_hybrid.py)
        return model.layout.layer_blocks[layer]
    if cfg.moe is None or len(blocks) == 1:
        return 0
    return 1 if cfg.is_moe_layer(layer) else 0


def stage_memory(model: TransformerModel, wl: Workload, stage: Stage) -> StageMemory:
    cfg, lay = model.config, model.layout
    tp = wl.tp
    train = wl.training
    act_wl = wl
    if (
        train
        and wl.method == "full"
        and wl.parallel in ("zero1", "zero2", "zero3", "fsdp")
        and wl.precision.startswith("amp")
    ):
        act_wl = replace(wl, precision="bf16" if wl.precision == "amp_bf16" else "fp16")
    d = dtypes(act_wl)
    a = d.act
    fmt = _train_format(wl) if train else weight_format(wl.weights)
    n_layers = len(stage.layers)
    blocks = lay.blocks
    # --- weights on this GPU
    w = float(
        weight_bytes(lay, fmt, tp=tp, layers=n_layers, embedding=stage.embedding, head=stage.head)
    )
    if (
        model.stored_bytes
        and model.stored_format
        and fmt.name == weight_format(model.stored_format).name
    ):
        est_all = weight_bytes(lay, fmt)
        if est_all:
            w *= model.stored_bytes / est_all  # exact bytes from the checkpoint's own headers
    per_layer = {i: blocks[_block_of(model, i)] for i in stage.layers}
    # --- trainable parameters, gradients, optimizer state
    trainable = 0.0
    largest_tensor = 0.0
    if train:
        if wl.method == "full":
            trainable = sum(b.params for b in per_layer.values()) / tp
            if stage.embedding:
                trainable += lay.embedding / tp + lay.vision
            if stage.head:
                trainable += (
                    (lay.lm_head / tp)
                    + lay.final_norm
                    + sum(x.params for x in lay.head_linears) / tp
                )
            largest_tensor = max(
                [lay.token_embedding / tp]
                + [x.in_features * x.out_features / tp for b in blocks for x in b.linears]
            )
        else:
            trainable = (
                sum(lora_params_block(b, wl.lora_targets, wl.lora_rank) for b in per_layer.values())
                / tp
            )
            largest_tensor = max(cfg.hidden_size, cfg.intermediate_size) * wl.lora_rank
    state_b, grad_b = _state_bytes(wl)
    grads = trainable * grad_b
    state = trainable * state_b
    dp = (
        max(1, wl.gpus // (wl.tp * wl.pp))
        if wl.parallel in ("ddp", "zero1", "zero2", "zero3", "fsdp")
        else 1
    )
    workspace = 0.0
    gathered = 0.0
    largest_block = max(b.params for b in blocks) / tp
    if train and wl.parallel == "ddp":
        workspace += grads  # DDP copies gradients into its all-reduce buckets
    elif wl.parallel == "zero1":
        state /= dp
        workspace += 2 * cfg.hidden_size**2 * 2  # reduce + all-gather buckets (HF "auto": hidden^2)
    elif wl.parallel == "zero2":
        state /= dp
        grads /= dp
        workspace += 2 * cfg.hidden_size**2 * 2
    elif wl.parallel in ("zero3", "fsdp"):
        state /= dp
        grads /= dp
        w /= dp
        # the layer being computed and the one prefetched, gathered in 16-bit, and one
        # layer's unsharded gradients before the reduce-scatter
        gathered = 2 * largest_block * 2 + (largest_block * 2 if wl.method == "full" else 0)
        if wl.parallel == "fsdp" and wl.method == "full" and wl.precision.startswith("amp"):
            grads = trainable * 4 / dp
            state = trainable * state_b / dp  # fp32 master weights: the state as _state_bytes
    workspace += gathered
    copies = 0.0
    if train and wl.method == "full" and d.casts:
        # autocast's 16-bit copies of every matmul weight, cached for the whole forward/backward
        lin = sum(sum(x.weight_params for x in b.linears) for b in per_layer.values())
        if stage.head and not cfg.encoder:
            lin += lay.lm_head or lay.token_embedding
        copies = 2 * lin / tp
    if train and wl.method == "qlora":
        # bitsandbytes dequantizes one weight at a time to bf16 for its matmul
        workspace += 2 * lay.largest_linear() / tp
    # --- activations
    acts_by_block: dict[int, LayerActs] = {}
    saved = Acts()
    ckpt = Acts()
    layer_saved_max = Acts()
    bwd_candidates: list[Acts] = []
    fwd_candidates: list[Acts] = []
    for i in stage.layers:
        bi = _block_of(model, i)
        if bi not in acts_by_block:
            b = blocks[bi]
            acts_by_block[bi] = layer_acts(cfg, act_wl, b.linears, b.moe, tp)
        la = acts_by_block[bi]
        saved = saved + la.saved
        ckpt = ckpt + Acts(d.stream * cfg.hidden_size)
        if (
            la.saved.per_token + la.saved.per_seq_sq * 4096
            > layer_saved_max.per_token + layer_saved_max.per_seq_sq * 4096
        ):
            layer_saved_max = la.saved
    for la in acts_by_block.values():
        bwd_candidates.extend(la.backward_transient)
        fwd_candidates.extend(la.forward_transient)
    ids = (
        Acts(8) if stage.embedding else Acts(d.stream * cfg.hidden_size)
    )  # token ids / received hidden
    vocab = cfg.vocab_size / tp
    h = cfg.hidden_size
    has_lm = stage.head and not cfg.encoder
    phases: list[SeqPhase] = []
    base = Parts(weights=w + copies, optimizer_state=state if train else 0, workspace=workspace)
    if train:
        grads_prev = grads if wl.grad_accum > 1 else 0.0
        kept = ckpt + layer_saved_max if wl.grad_checkpointing else saved
        kept_fwd = ckpt if wl.grad_checkpointing else saved
        inflight = stage.inflight
        head_saved = Acts()
        loss_peak = Acts()
        held = Acts()
        if has_lm:
            head_saved = Acts(4 * h + (d.stream * h if wl.method == "full" else 0))
            if wl.method == "full":
                head_saved = head_saved + Acts((a if d.casts else d.stream) * h)
            if cfg.logit_softcap:
                head_saved = head_saved + Acts(a * vocab)  # the softcap's saved tanh output
            # the plain loop's `out` keeps the logits until the step is over (workload.Loop)
            held = Acts(a * vocab if wl.loop == "plain" else 0)
            # fp32 log-softmax output, its gradient and the input's gradient
            loss_peak = Acts(12 * vocab)
        elif stage.head:
            head_saved = Acts(d.stream * h)
        prior = kept_fwd.scaled(inflight - 1) if inflight > 1 else Acts()
        phases.append(
            SeqPhase(
                "loss backward" if has_lm else "forward end",
                base + Parts(gradients=grads_prev),
                acts=ids + kept_fwd + head_saved + prior + held,
                work=loss_peak,
            )
        )
        worst_bwd = max(bwd_candidates, key=lambda x: x.per_sequence(wl.seq_len), default=Acts())
        head_grads = 0.0
        if wl.method == "full" and has_lm:
            head_grads = (lay.lm_head or lay.token_embedding) / tp * grad_b
        last_grads = 0.0
        if stage.layers:
            last = blocks[_block_of(model, stage.layers[-1])]
            if wl.method == "full":
                last_grads = last.params / tp * grad_b
            else:
                last_grads = lora_params_block(last, wl.lora_targets, wl.lora_rank) / tp * 4
        phases.append(
            SeqPhase(
                "backward, last layer",
                base + Parts(gradients=max(grads_prev, min(grads, head_grads + last_grads))),
                acts=ids + kept + prior + held,
                work=worst_bwd,
            )
        )
        first = layer_saved_max if stage.layers else Acts()
        tied = 0.0
        if wl.method == "full" and stage.embedding and cfg.tie_word_embeddings and not cfg.encoder:
            # a tied table gets a second gradient from the embedding's backward; autograd
            # sums the two into a new tensor while both exist
            tied = 2 * lay.token_embedding / tp * grad_b
        phases.append(
            SeqPhase(
                "backward, embedding" if tied else "backward, first layer",
                base + Parts(gradients=grads, workspace=tied),
                acts=ids + first + (ckpt if wl.grad_checkpointing else Acts()) + prior + held,
                work=worst_bwd,
            )
        )
        temp = 0.0
        # torch's foreach AdamW makes one parameter-sized temporary; fused=True has none,
        # foreach=False (and the CPU's kernels) two of the tensor being updated
        if wl.optimizer in ("adamw",) and wl.optimizer_impl != "fused":
            elem = state_b / 2 if wl.method == "full" else 4.0
            temp = (
                trainable
                / (dp if wl.parallel in ("zero1", "zero2", "zero3", "fsdp") else 1)
                * min(elem, 4.0)
                if wl.backend == "cuda" and wl.optimizer_impl != "loop"
                else 2 * largest_tensor * 4
            )
        phases.append(
            SeqPhase(
                "optimizer step",
                Parts(
                    weights=w, gradients=grads, optimizer_state=state, workspace=workspace + temp
                ),
                acts=ids + held,
            )
        )
        return StageMemory(stage, tuple(phases), model, wl, tp)
    worst_fwd = fwd_candidates
    if wl.mode in ("inference", "eval"):
        for c in worst_fwd or [Acts()]:
            phases.append(SeqPhase("forward", base, acts=ids + c))
        if has_lm:
            name, head = head_acts(wl.mode, d.stream * h, a, vocab)
            if cfg.logit_scale and wl.mode == "inference":
                head = head + Acts(a * vocab)  # Cohere's scaled copy of the logits
            phases.append(SeqPhase(name, base, acts=ids + head))
        elif stage.head and wl.mode == "inference" and vocab_head(cfg):
            phases.append(
                SeqPhase("logits", base, acts=ids + encoder_logits(d.stream * h, a, vocab))
            )
        phases += vision_phases(cfg, stage.embedding, base, a)
        return StageMemory(stage, tuple(phases), model, wl, tp)
    # generate: prefill, then decode until the cache holds prompt + new - 1 tokens;
    # generate keeps the last position's logits and an fp32 copy of them per sequence
    logit_bytes = (a + 4) * vocab if has_lm else 0.0
    moments = prefill_moments(model, acts_by_block, stage.embedding, d.stream, a, tp)
    for name, c in moments or [("prefill", Acts())]:
        phases.append(
            SeqPhase(
                name,
                base,
                acts=ids + c,
                kv="prompt",
                chunk=wl.prefill_chunk,
                per_seq_const=logit_bytes,
            )
        )
    # T5: the encoder's output stays alive while the decoder generates
    held = Acts(d.stream * h) if cfg.encdec is not None and stage.embedding else Acts()
    phases.append(
        SeqPhase(
            "decode, cache full",
            base,
            acts=held,
            kv="context",
            kv_concat=True,
            per_seq_const=logit_bytes + 8 * vocab,
        )
    )
    phases += vision_phases(cfg, stage.embedding, base, a)
    return StageMemory(stage, tuple(phases), model, wl, tp)


def vision_phases(cfg: TransformerConfig, embedding: bool, base: Parts, a: int) -> list[SeqPhase]:
    """A multimodal model's image encoding, one image per sequence (fit.transformer.vision),
    on the GPU that holds the embedding: before the prefill, with no cache yet."""
    if cfg.vision is None or not embedding:
        return []
    return [SeqPhase("vision tower", base, per_seq_const=tower_forward_bytes(cfg.vision, a))]
