"""One host of the fleet as the cluster view's host table shows it: figures, no GPUs.

The cluster view reads these aggregated by Prometheus (one series per host
instead of one per GPU, sources/prometheus/summary.py), so the host table of a
1,000-host fleet costs what 1,000 rows cost, not 8,000 GPUs. The keys of
`row()` are those of render.cluster_text.host_row, which the views share.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gputui.model.cluster import HostState


@dataclass(frozen=True, slots=True)
class HostSummary:
    name: str
    gpus: int
    state: HostState = "up"
    gpus_lost: int = 0
    util_mean: float | None = None
    util_max: float | None = None
    memory_used: float | None = None  # bytes
    memory_total: float | None = None  # bytes
    hottest_c: float | None = None
    hottest_gpu: int | None = None
    power_w: float | None = None
    last_seen: float | None = None
    age_s: float | None = None
    instances: tuple[str, ...] = ()
    exporters: tuple[str, ...] = ()  # "dcgm", "gputui"
    simulated: bool = False
    processes: int | None = None  # not aggregated: None where unknown
    gpus_idle_held: int = 0  # GPUs holding IDLE_HELD_MIB or more at 0 % utilisation

    def row(self) -> dict[str, Any]:
        """The host table's figures, keyed as render.cluster_text.host_row keys them."""
        return {
            "host": self.name,
            "state": self.state,
            "gpus": self.gpus,
            "gpus_lost": self.gpus_lost,
            "util_mean": self.util_mean,
            "util_max": self.util_max,
            "memory_used": self.memory_used,
            "memory_total": self.memory_total,
            "hottest_c": self.hottest_c,
            "hottest_gpu": self.hottest_gpu,
            "power_w": self.power_w,
            "age_s": self.age_s,
            "exporters": list(self.exporters),
            "simulated": self.simulated,
            "processes": self.processes,
            "gpus_idle_held": self.gpus_idle_held,
        }


# A GPU holding this much memory (MiB) at 0 % utilisation is "idle with memory held": a job
# that keeps its memory and does nothing, what a team lead asks about first. The floor
# leaves out the driver's and an idle context's few hundred MiB.
IDLE_HELD_MIB = 1024


@dataclass(frozen=True, slots=True)
class UserTotal:
    """One user's GPU memory across the fleet (from gputui exporters' process series)."""

    user: str
    memory: float  # bytes
    processes: int
    gpus: int
    hosts: int
