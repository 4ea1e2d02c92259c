"""Simulated GPM (GPU Performance Monitoring) for GPUs of compute capability 9.0 and later.

What NVML's utilization cannot tell and GPM can: how many SMs the kernels keep
busy. A process's kernels keep `sm_share` of the SMs busy while they run (its
workload's share unless the scenario sets one), so a process with a low share and
a high utilization is the "busy but idle" GPU that GPM exists to show. Tensor
pipes follow the SMs by workload; DRAM bandwidth follows memory utilization.
"""

from __future__ import annotations

from collections.abc import Sequence

from gputui.model.snapshot import GPM_FIELDS
from gputui.sources.simulated.process import Activity, SimProcess
from gputui.sources.simulated.spec import GpuSpec, ProcessSpec

__all__ = ["GPM_FIELDS", "gpm_values", "has_gpm"]

# Share of SMs busy while a workload's kernels run, and of those the share in tensor pipes.
_SM_SHARE = {"training": 0.85, "inference": 0.55, "interactive": 0.45, "graphics": 0.3}
_TENSOR_SHARE = {"training": 0.7, "inference": 0.6, "interactive": 0.3, "graphics": 0.0}
_IDLE_SM_SHARE = 0.6  # a GPU with no listed process: background kernels
_OCCUPANCY_PER_SM = 0.5  # resident warps per busy SM, as a share of the maximum
_DRAM_PER_MEM_UTIL = 0.8


def has_gpm(spec: GpuSpec) -> bool:
    """GPM is Hopper and later: compute capability 9.0 or more (as NVML reports it)."""
    cc = spec.compute_capability
    if not cc:
        return False
    major = cc.split(".", 1)[0]
    return major.isdigit() and int(major) >= 9


def _share(p: ProcessSpec) -> float:
    return p.sm_share if p.sm_share is not None else _SM_SHARE.get(p.workload, 0.5)


def gpm_values(
    acts: Sequence[tuple[SimProcess, Activity]], util: float, util_memory: float
) -> dict[str, float]:
    """The four GPM percentages for one poll of one GPU."""
    if acts:
        # utilization is capped at 100 % (time with a kernel running): scale the jobs alike
        scale = min(1.0, 100.0 / max(1e-9, sum(a.util for _, a in acts)))
        sm = scale * sum(a.util * _share(p.spec) for p, a in acts)
        tensor = scale * sum(
            a.util * _share(p.spec) * _TENSOR_SHARE.get(p.spec.workload, 0.0) for p, a in acts
        )
    else:
        sm = util * _IDLE_SM_SHARE
        tensor = 0.0
    sm = min(100.0, sm)
    values = (sm, sm * _OCCUPANCY_PER_SM, min(100.0, tensor), util_memory * _DRAM_PER_MEM_UTIL)
    return {name: round(v, 1) for name, v in zip(GPM_FIELDS, values, strict=True)}
