"""Simulated GPUs: a deterministic stand-in for NVML, driven by a scenario file.

Used for the demo mode, screenshots, tests and benchmarks on machines without
a GPU. Every value is a pure function of (seed, device, t): randomness comes
from a hash of (seed, channel, time bucket), never from a stateful generator,
so the snapshot at t=42 is the same whether poll() ran once or a thousand
times before it. Slow quantities (temperature, load average) are computed as
weighted sums of the fast ones over fixed past time grids instead of being
integrated step by step, for the same reason.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from gputui.model.snapshot import (
    DeviceSnapshot,
    GpuProcess,
    HostSnapshot,
    Snapshot,
)
from gputui.sources.simulated.gpu import SimGpu
from gputui.sources.simulated.noise import CH_CORE, noise_key, value_noise
from gputui.sources.simulated.process import Activity, SimProcess
from gputui.sources.simulated.scenario import load_scenario
from gputui.sources.simulated.spec import Scenario

# Timestamp of t=0 when a test clock is injected: 2026-01-01T00:00:00Z, so output is reproducible.
FIXED_EPOCH = 1_767_225_600.0


class SimulatedSource:
    """A Source whose GPUs, processes and host come from a scenario file."""

    name = "simulated"

    def __init__(
        self,
        scenario: Scenario,
        *,
        with_host: bool = True,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self.scenario = scenario
        self._with_host = with_host
        if clock is None:
            started = time.monotonic()
            self._clock: Callable[[], float] = lambda: time.monotonic() - started
            default_epoch = time.time()
        else:
            self._clock = clock
            default_epoch = FIXED_EPOCH
        self._epoch = (
            scenario.start_timestamp if scenario.start_timestamp is not None else (default_epoch)
        )
        seed = scenario.seed
        self._procs = [SimProcess(p, seed, i) for i, p in enumerate(scenario.processes)]
        self._gpus = [
            SimGpu(g, i, seed, [p for p in self._procs if p.spec.gpu == i])
            for i, g in enumerate(scenario.gpus)
        ]
        self._core_keys = [noise_key(seed, CH_CORE, c) for c in range(scenario.host.cpu_count)]
        self._load_cache: dict[tuple[float, int], float] = {}

    @classmethod
    def from_scenario(
        cls,
        path: Path | None = None,
        *,
        with_host: bool = True,
        clock: Callable[[], float] | None = None,
    ) -> SimulatedSource:
        if path is None:
            from gputui.core.resources import default_scenario

            path = default_scenario()
        return cls(load_scenario(path), with_host=with_host, clock=clock)

    def poll(self) -> Snapshot:
        return self.snapshot_at(self._clock())

    def close(self) -> None:
        pass

    def snapshot_at(self, t: float) -> Snapshot:
        """The whole machine at simulated time `t` (seconds since the scenario started)."""
        sc = self.scenario
        devices: list[DeviceSnapshot] = []
        processes: list[GpuProcess] = []
        all_acts: list[tuple[SimProcess, Activity]] = []
        for gpu in self._gpus:
            acts = [(p, p.activity(t)) for p in gpu.procs if p.alive(t)]
            all_acts.extend(acts)
            devices.append(gpu.snapshot(t, acts))
            if gpu.lost(t):
                continue
            for p, a in acts:
                processes.append(self._process(p, a, t))
        host = self._host(t, all_acts) if self._with_host else None
        return Snapshot(
            timestamp=self._epoch + t,
            source="simulated",
            devices=tuple(devices),
            processes=tuple(processes),
            host=host,
            driver_version=sc.driver_version,
            cuda_driver_version=sc.cuda_driver_version,
            nvml_version=sc.nvml_version,
            notices=sc.notices,
        )

    def _process(self, p: SimProcess, a: Activity, t: float) -> GpuProcess:
        s = p.spec
        gpu = self._gpus[s.gpu]
        gpu_mem = int(a.memory) >> 20 << 20
        sm_util: int | None = round(a.util)
        mem_util: int | None = round(a.util * gpu.mem_intensity)
        gi = ci = None
        if gpu.spec.mig:
            sm_util = mem_util = None  # NVML has no per-process utilization in MIG mode
            if s.mig is not None:
                gi = gpu.spec.mig[s.mig].gpu_instance_id
                ci = gpu.spec.mig[s.mig].compute_instance_id
        seen_on_gpu = GpuProcess(
            gpu_index=s.gpu,
            pid=s.pid,
            type=s.type,
            gpu_memory=gpu_mem,
            sm_util=sm_util,
            mem_util=mem_util,
            host_visible=False,
            gpu_instance_id=gi,
            compute_instance_id=ci,
            mig_index=s.mig if gi is not None else None,
        )
        if not s.host_visible:
            return seen_on_gpu
        return replace(
            seen_on_gpu,
            host_visible=True,
            user=s.user,
            name=p.name,
            cmdline=s.cmdline,
            cpu_percent=round(a.cpu, 1),
            rss=int(a.rss) >> 12 << 12,
            running_s=t - s.start_s,
            container=s.container,
            container_pid=s.container_pid,
        )

    def _busy_cores(self, t: float) -> float:
        h = self.scenario.host
        total = h.cpu_count * h.base_cpu_percent / 100.0
        for p in self._procs:
            if p.alive(t) and not self._gpus[p.spec.gpu].lost(t):
                total += p.activity(t).cpu / 100.0
        return min(float(h.cpu_count), total)

    def _grid_busy_cores(self, step: float, index: int) -> float:
        """Busy cores at grid time index * step; memoised, as it is a pure function."""
        key = (step, index)
        value = self._load_cache.get(key)
        if value is None:
            if len(self._load_cache) > 256:
                self._load_cache.clear()
            value = self._load_cache[key] = self._busy_cores(index * step)
        return value

    def _load_average(self, t: float) -> tuple[float, float, float]:
        """Averages of busy cores over the last 1, 5 and 15 minutes, on fixed grids."""
        out: list[float] = []
        for window, step in ((60.0, 10.0), (300.0, 30.0), (900.0, 90.0)):
            base = math.floor(t / step)
            n = int(window / step)
            total = sum(self._grid_busy_cores(step, base - k) for k in range(n))
            out.append(round(total / n, 2))
        return out[0], out[1], out[2]

    def _host(self, t: float, acts: list[tuple[SimProcess, Activity]]) -> HostSnapshot:
        h = self.scenario.host
        busy = h.cpu_count * h.base_cpu_percent / 100.0 + sum(
            a.cpu / 100.0 for p, a in acts if not self._gpus[p.spec.gpu].lost(t)
        )
        busy = min(float(h.cpu_count), busy)
        weights = [0.3 + value_noise(k, t, 2.0) ** 2 for k in self._core_keys]
        # Jobs keep a few cores hot rather than spreading evenly: fill the heaviest-weighted first.
        order = sorted(range(h.cpu_count), key=lambda c: -weights[c])
        per_core = [0.0] * h.cpu_count
        remaining = busy
        for rank, core in enumerate(order):
            share = min(1.0, remaining * (0.85 if rank < h.cpu_count - 1 else 1.0))
            per_core[core] = share
            remaining -= share
            if remaining <= 0:
                break
        per_core_pct = tuple(
            round(min(100.0, 100.0 * c + 3.0 * value_noise(self._core_keys[i], t, 0.8)), 1)
            for i, c in enumerate(per_core)
        )
        used = h.base_memory_used + sum(a.rss for _, a in acts)
        used = min(used, h.memory_total * 0.97)
        return HostSnapshot(
            hostname=self.scenario.hostname,
            cpu_percent=round(sum(per_core_pct) / len(per_core_pct), 1),
            per_cpu_percent=per_core_pct,
            load_average=self._load_average(t),
            memory_total=h.memory_total,
            memory_used=int(used),
            memory_available=max(0, int(h.memory_total - used)),
            swap_total=h.swap_total,
            swap_used=h.swap_used,
        )
