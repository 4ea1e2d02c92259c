"""When NVML's utilization and GPM's SM activity tell different stories.

NVML's `utilization_gpu` is the share of the sample period in which any kernel
ran; GPM's `sm_active_pct` is the share of SMs that worked. A GPU running one
small kernel after another reads near 100 % busy with most SMs idle: the case
DCGM users watch SM_ACTIVE for. Every view that shows both says so in the same
words, by this one rule.
"""

from __future__ import annotations

# "Busy" as NVML counts it, and SMs active under half of that: the two disagree.
BUSY_PCT = 80


def sms_mostly_idle(utilization_gpu: float | None, sm_active_pct: float | None) -> bool:
    """NVML says busy while fewer than half as many SMs as that worked (both known)."""
    if utilization_gpu is None or sm_active_pct is None:
        return False
    return utilization_gpu >= BUSY_PCT and sm_active_pct < utilization_gpu / 2
