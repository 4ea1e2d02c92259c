"""From a transformer, a workload and a GPU to answers: peak, verdicts, largest batch,
longest context (and rough tokens/s, transformer/workload_speed.py).

The stages' phases (memory.py) are evaluated at a batch and a sequence length;
the core adds the per-process overheads (fit/core/overheads.py), decides the
verdict and solves the largest batch (fit/core/batch.py). The ranking of every
catalog card and the fewest cards that would do are ranking.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from gputui.fit.core.batch import largest_batch
from gputui.fit.core.breakdown import ITEMS, Breakdown, Overheads
from gputui.fit.core.overheads import ALLOCATOR_SLACK, cuda_context_bytes, library_workspace_bytes
from gputui.fit.core.speed import Speed
from gputui.fit.core.target import Target
from gputui.fit.core.verdict import Answer, Verdict, verdict
from gputui.fit.transformer.activations_fn import known_activation
from gputui.fit.transformer.bounds import show
from gputui.fit.transformer.memory import SeqPhase, StageMemory, stage_memory, stages
from gputui.fit.transformer.model import TransformerModel
from gputui.fit.transformer.prefill import VLLM_BATCHED_TOKENS
from gputui.fit.transformer.workload import Workload
from gputui.fit.transformer.workload_speed import workload_speed

MAX_BATCH_CAP = 1 << 20
MAX_CONTEXT_CAP = 1 << 22  # when the config names no maximum
CARD_COUNTS = (1, 2, 4, 8, 16, 32, 64)
VLLM_GPU_MEMORY_UTILIZATION = 0.9  # vLLM's default share of the card's memory


@dataclass(frozen=True, slots=True)
class Memory:
    """Every GPU's phases; the peak is the worst phase on the worst GPU."""

    stages: tuple[StageMemory, ...]
    cuda_context: int
    slack: float
    library: int

    @property
    def _overheads(self) -> Overheads:
        return Overheads(self.cuda_context, self.slack, self.library)

    def breakdown(self, batch: int, seq: int) -> tuple[str, Breakdown]:
        over = self._overheads
        best: tuple[str, Breakdown] | None = None
        for sm in self.stages:
            for ph in sm.phases:
                b = over.breakdown(sm.parts(ph, batch, seq), ITEMS)
                if best is None or b.total > best[1].total:
                    name = ph.name if len(self.stages) == 1 else f"{sm.stage.name}: {ph.name}"
                    best = (name, b)
        assert best is not None
        return best

    def peak(self, batch: int, seq: int) -> int:
        """breakdown(batch, seq)[1].total without building the breakdowns (searches call it often)."""
        over = self._overheads
        best = 0
        for sm in self.stages:
            for ph in sm.phases:
                best = max(best, over.total(sm.parts(ph, batch, seq)))
        return best

    def max_batch(self, limit: int, seq: int) -> int:
        """The largest batch whose peak is within `limit` (every phase is affine in the batch)."""
        lines = []
        for sm in self.stages:
            for ph in sm.phases:
                t0 = self._tensor(sm, ph, 0, seq)
                lines.append((t0, self._tensor(sm, ph, 1, seq) - t0))
        return largest_batch(
            lines,
            limit,
            lambda b: self.peak(b, seq),
            scale=1 + self.slack,
            context=self.cuda_context,
            cap=MAX_BATCH_CAP,
        )

    def _tensor(self, sm: StageMemory, ph: SeqPhase, batch: int, seq: int) -> float:
        return sm.parts(ph, batch, seq).total + self.library

    def longest_seq(self, limit: int, batch: int, cap: int) -> int:
        """The longest sequence (prompt, for generation) whose peak is within `limit` (0: none)."""
        if self.peak(batch, 1) > limit:
            return 0
        if self.peak(batch, cap) <= limit:
            return cap
        lo, hi = 1, cap  # peak(lo) fits, peak(hi) does not
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if self.peak(batch, mid) <= limit:
                lo = mid
            else:
                hi = mid
        return lo


def stage_memories(model: TransformerModel, wl: Workload) -> tuple[StageMemory, ...]:
    return tuple(stage_memory(model, wl, st) for st in stages(model, wl))


def memory(
    model: TransformerModel,
    wl: Workload,
    cc: str | None = None,
    built: tuple[StageMemory, ...] | None = None,
) -> Memory:
    """The workload's memory on a GPU of compute capability `cc` (`built`: reuse stages)."""
    sms = built if built is not None else stage_memories(model, wl)
    if wl.backend == "cpu":
        return Memory(sms, 0, 0.0, 0)
    return Memory(sms, cuda_context_bytes(cc), ALLOCATOR_SLACK, library_workspace_bytes(cc))


def engine_limit(wl: Workload, total: int) -> int:
    """The memory the engine lets the job use: vLLM takes gpu_memory_utilization of the card
    (weights, profiled activations, then its KV pool); the others whatever is there."""
    if wl.mode == "generate" and wl.engine == "vllm":
        return int(total * VLLM_GPU_MEMORY_UTILIZATION)
    return total


def vllm_pool(model: TransformerModel, wl: Workload, target: Target, limit: int) -> tuple[int, int]:
    """(vLLM's KV pool, one sequence's blocks in it): the pool is `limit` less the weights,
    one profiled prefill step of max_num_batched_tokens and the overheads; the pool is one
    allocation per layer, so no allocator slack is counted on it."""
    one = replace(wl, batch_size=1, prefill_chunk=VLLM_BATCHED_TOKENS)
    mem = memory(model, one, target.cc)
    _, b = mem.breakdown(1, wl.seq_len)
    rest = b.total - b.kv_cache * (1 + mem.slack)
    return max(0, int(limit - rest)), int(b.kv_cache)


def vllm_sequences(model: TransformerModel, wl: Workload, target: Target, limit: int) -> int:
    """How many sequences of the asked context vLLM's KV pool holds."""
    pool, per_seq = vllm_pool(model, wl, target, limit)
    return MAX_BATCH_CAP if per_seq <= 0 else min(MAX_BATCH_CAP, pool // per_seq)


def context_cap(model: TransformerModel) -> tuple[int, bool]:
    m = model.config.max_position_embeddings
    return (m, True) if m else (MAX_CONTEXT_CAP, False)


@dataclass(frozen=True, slots=True)
class Estimate(Answer):
    model: TransformerModel
    workload: Workload
    target: Target
    peak_phase: str
    breakdown: Breakdown
    limit_bytes: int
    verdict: Verdict
    max_batch_size: int
    longest_seq: int  # prompt tokens for generate; 0 when even one token does not fit
    longest_capped: bool  # the answer is the model's max_position_embeddings, not memory
    free_bytes: int | None = None
    verdict_free: Verdict | None = None
    max_batch_size_free: int | None = None
    longest_seq_free: int | None = None
    speed: Speed | None = None
    warnings: tuple[str, ...] = field(default=())
    # longest_seq is where the search stopped (no maximum context known), not an answer
    longest_at_search_limit: bool = False

    @property
    def longest_context(self) -> int:
        return self.longest_seq + (
            self.workload.new_tokens if self.workload.mode == "generate" and self.longest_seq else 0
        )


def estimate(
    model: TransformerModel,
    wl: Workload,
    target: Target,
    built: tuple[StageMemory, ...] | None = None,
) -> Estimate:
    mem = memory(model, wl, target.cc, built)
    phase, b = mem.breakdown(wl.batch_size, wl.seq_len)
    limit = engine_limit(wl, target.memory_total)
    vllm = wl.mode == "generate" and wl.engine == "vllm"
    cap, _known = context_cap(model)
    cap = cap - (wl.new_tokens if wl.mode == "generate" else 0)
    if wl.seq_len > cap and not model.config.learned_positions:
        # asked beyond the configured maximum (RoPE scaling): memory is the only limit
        cap, _known = MAX_CONTEXT_CAP, False
    cap = max(cap, 1)
    longest = mem.longest_seq(limit, wl.batch_size, cap)
    warnings = list(model.warnings)
    if longest >= cap and not _known:
        # the search's own ceiling, not an answer: say so rather than print it as one
        warnings.append(
            f"the config names no maximum context (max_position_embeddings): the longest "
            f"{'prompt' if wl.mode == 'generate' else 'sequence'} was searched up to "
            f"{cap:,} tokens only; the model itself may allow fewer"
        )
    if wl.training and not known_activation(model.config.activation):
        warnings.append(
            f"activation {show(model.config.activation)}: what its backward keeps is not "
            "known; counted as one tensor of the MLP width per layer (an activation written "
            "in Python keeps more: GPT-2's gelu_new keeps four)"
        )
    if model.config.max_position_embeddings and wl.context > model.config.max_position_embeddings:
        warnings.append(
            f"context {wl.context:,} is beyond the model's max_position_embeddings "
            f"{model.config.max_position_embeddings:,}"
        )
    est = Estimate(
        model,
        wl,
        target,
        phase,
        b,
        limit,
        verdict(b.total, limit),
        vllm_sequences(model, wl, target, limit) if vllm else mem.max_batch(limit, wl.seq_len),
        longest,
        longest == cap and _known,
        speed=workload_speed(model, wl, target.card, wl.batch_size, target.architecture)
        if target.card
        else None,
        warnings=tuple(warnings),
        longest_at_search_limit=longest >= cap and not _known,
    )
    if target.memory_free is not None:
        free = min(target.memory_free, limit)
        est = replace(
            est,
            free_bytes=free,
            verdict_free=verdict(b.total, free),
            max_batch_size_free=vllm_sequences(model, wl, target, free)
            if vllm
            else mem.max_batch(free, wl.seq_len),
            longest_seq_free=mem.longest_seq(free, wl.batch_size, cap),
        )
    return est
