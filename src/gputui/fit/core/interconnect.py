"""How long a tensor-parallel all-reduce takes between GPUs of one card model.

Tensor parallelism (Megatron-LM: Shoeybi et al. 2019, "Megatron-LM: Training
Multi-Billion Parameter Language Models Using Model Parallelism", section 3) splits
each layer's matmuls across GPUs and sums their partial results with two all-reduces
per layer in the forward pass (after attention's output projection and after the MLP).
Nothing overlaps them in inference, so each costs its whole time on every step, and at
batch 1 a decode step's all-reduces are tiny: their latency, not their bandwidth, is
what they cost.

The time of one all-reduce is NCCL's own cost model (NVIDIA/nccl src/graph/tuning.cc,
`ncclTopoTuneModel` and `ncclTopoGetAlgoTime`): a ring of n GPUs takes 2(n - 1) steps,
each paying a per-hop latency on top of a base latency, and moves the message at the
bus bandwidth times n / (2(n - 1)); NCCL picks the faster of its protocols, LL (low
latency, a quarter of the bandwidth) for small messages and Simple for large ones.

The link comes from the catalog: the card's NVLink figure (NVIDIA states it as the
total of both directions, so each direction gets half) where as many GPUs as asked can
share it (a 2-way bridge joins two), else PCIe x16 at the generation of the
architecture (PCI-SIG: 8, 16 and 32 GT/s per lane for 3.0, 4.0 and 5.0 with 128b/130b
coding: 15.75, 31.5 and 63 GB/s per direction).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gputui.catalog.models import Card

# NCCL's ring latencies in seconds (tuning.cc baseLat and hwLat, in us there).
BASE_LATENCY_S = {"LL": 3.6e-6, "Simple": 8.4e-6}
HOP_LATENCY_S = {
    "nvlink": {"LL": 0.47e-6, "Simple": 3.4e-6},
    "pcie": {"LL": 1.0e-6, "Simple": 5.7e-6},
}
# LL sends 8 bytes of data in 16 (a flag per word) and NCCL counts a quarter of the bus
# bandwidth for a ring all-reduce in it (tuning.cc: `busBw *= 1.0/4.0`).
LL_BANDWIDTH_SHARE = 0.25
# PCIe x16 bandwidth per direction, bytes/s, by the generation each architecture's
# cards use (NVIDIA's architecture whitepapers; Pascal to Turing PCIe 3.0, Ampere and
# Ada 4.0, Hopper and Blackwell 5.0).
PCIE_GEN = {"pascal": 3, "volta": 3, "turing": 3, "ampere": 4, "ada": 4, "hopper": 5}
PCIE_BYTES_PER_S = {3: 15.75e9, 4: 31.5e9, 5: 63e9}
# The GPUs one NVLink bridge joins where the catalog says so ("2-way bridge",
# "bridge (2 GPUs)", "bridge (2- or 4-way)"); a bridge that names no count joins two.
_BRIDGE_GPUS = re.compile(r"(\d)(?:-way| GPUs|-? or (\d)-way)")
_NVLINK_RATE = re.compile(r"NVLink \d[^;]*?([\d.]+) (GB|TB)/s")


@dataclass(frozen=True, slots=True)
class Link:
    """What a collective between `gpus` of a card runs over."""

    kind: str  # "nvlink" or "pcie"
    bytes_per_s: float  # each direction
    basis: str  # e.g. "NVLink 450 GB/s per direction"


def nvlink(card: Card) -> tuple[float, int | None] | None:
    """The card's NVLink bandwidth per direction (bytes/s) and the GPUs a bridge joins
    (None: a switch or direct links, any count of a node); None without NVLink."""
    if card.nvlink is None:
        return None
    found = _NVLINK_RATE.search(card.nvlink)
    if found is None:
        return None
    total = float(found.group(1)) * (1e12 if found.group(2) == "TB" else 1e9)
    bridge = None
    if "bridge" in card.nvlink:
        count = _BRIDGE_GPUS.search(card.nvlink)
        bridge = int(count.group(2) or count.group(1)) if count else 2
    return total / 2, bridge


def link(card: Card, gpus: int) -> Link | None:
    """The link `gpus` of `card` share for collectives; None where the catalog says
    nothing to work it out from (no NVLink figure and an architecture of unknown PCIe)."""
    found = nvlink(card)
    if found is not None and (found[1] is None or gpus <= found[1]):
        return Link("nvlink", found[0], f"NVLink {found[0] / 1e9:g} GB/s per direction")
    gen = PCIE_GEN.get(card.architecture, 5 if card.architecture == "blackwell" else 0)
    if gen == 0:
        return None
    rate = PCIE_BYTES_PER_S[gen]
    return Link("pcie", rate, f"PCIe {gen}.0 x16 {rate / 1e9:g} GB/s per direction")


def all_reduce_s(message_bytes: float, gpus: int, over: Link) -> float:
    """Seconds of one ring all-reduce of `message_bytes` over `gpus` (NCCL's model)."""
    if gpus <= 1:
        return 0.0
    steps = 2 * (gpus - 1)
    algorithm_share = gpus / steps  # bus bandwidth to algorithm bandwidth
    best = float("inf")
    for proto, share in (("LL", LL_BANDWIDTH_SHARE), ("Simple", 1.0)):
        latency = BASE_LATENCY_S[proto] + steps * HOP_LATENCY_S[over.kind][proto]
        best = min(best, latency + message_bytes / (over.bytes_per_s * share * algorithm_share))
    return best
