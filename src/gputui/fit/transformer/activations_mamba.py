"""Activation bytes of one of Jamba's Mamba mixers (the part of the layer before its MLP).

transformers runs a Mamba mixer one of two ways:
  * on CUDA with the mamba-ssm / causal-conv1d kernels (`use_mamba_kernels`, the
    default): in_proj's output (x and the gate z, 2 x inner), the conv output
    (inner), x_proj's output and its dt/B/C RMS norms (dt_rank + 2 d_state, fp32
    upcasts kept), the time step after dt_proj (inner) and the scan's output (inner)
    are kept; the scan's own chunk states are negligible;
  * elsewhere (CPU, or without the kernels) the slow path materializes the
    discretized A, B x u and the scanned states as (batch, inner, seq, d_state) fp32
    tensors: 16 x inner x d_state bytes per token in a forward, 12 kept for backward.
The numbers are per token; a Mamba mixer has nothing that grows with seq^2.
"""

from __future__ import annotations

from collections.abc import Callable

from gputui.fit.transformer.config import TransformerConfig
from gputui.fit.transformer.workload import Workload


def slow_path(wl: Workload) -> bool:
    return wl.backend != "cuda"


def mamba_saved(
    cfg: TransformerConfig,
    wl: Workload,
    act: int,
    stream: int,
    active: Callable[[str], bool],
    tp: int,
) -> float:
    """Bytes per token the mixer keeps for backward (its norm's output, when in_proj trains)."""
    m = cfg.mamba
    assert m is not None
    inner = m.inner / tp
    small = m.dt_rank + 2 * m.d_state
    saved = stream * cfg.hidden_size if active("mamba_in") else 0.0
    saved += act * (2 * inner + inner + inner) + (4 + 2 * act) * small
    if active("mamba_out"):
        saved += act * inner
    if slow_path(wl):
        saved += 12 * inner * m.d_state
    return saved


def mamba_forward(cfg: TransformerConfig, wl: Workload, act: int, stream: int, tp: int) -> float:
    """The mixer's largest no-grad moment, bytes per token."""
    m = cfg.mamba
    assert m is not None
    inner = m.inner / tp
    peak = 2 * stream * cfg.hidden_size + act * 5 * inner
    if slow_path(wl):
        peak += 16 * inner * m.d_state
    return peak


def mamba_backward(cfg: TransformerConfig, wl: Workload, act: int, tp: int) -> float:
    """The largest extra during the mixer's backward, bytes per token."""
    m = cfg.mamba
    assert m is not None
    inner = m.inner / tp
    return act * 4 * inner + (8 * inner * m.d_state if slow_path(wl) else 0)
