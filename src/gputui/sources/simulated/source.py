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
from pathlib import Path

from gputui.model.snapshot import (
    DeviceInfo,
    DeviceSample,
    DeviceSnapshot,
    GpuProcess,
    HostSnapshot,
    MigDevice,
    Snapshot,
)
from gputui.sources.simulated.scenario import (
    INFO_FIELDS,
    GpuSpec,
    ProcessSpec,
    Scenario,
    load_scenario,
)

# Timestamp of t=0 when a test clock is injected: 2026-01-01T00:00:00Z, so output is reproducible.
FIXED_EPOCH = 1_767_225_600.0
LOST_REASON = "GPU is lost"

_MASK = (1 << 64) - 1

# Noise channels: distinct streams so that e.g. power noise is not a copy of utilization noise.
_CH_UTIL = 1
_CH_POWER = 2
_CH_TEMP = 3
_CH_PCIE_RX = 4
_CH_PCIE_TX = 5
_CH_CLOCK = 6
_CH_PROC_UTIL = 10
_CH_PROC_CPU = 11
_CH_PROC_BURST = 12
_CH_PROC_MEM = 13
_CH_CORE = 20
_CH_IDLE = 21

_TEMP_TAU_S = 40.0  # thermal time constant: temperature trails power by about this much
_TEMP_STEP_S = 4.0
_TEMP_STEPS = 40  # 160 s of power history, four time constants
_ENERGY_STEP_S = 60.0
_ENERGY_CHECKPOINT = 64  # memoise the running sum every 64 steps (about an hour)
ENERGY_HORIZON_S = 30 * 86400.0
_MIG_UNSUPPORTED = frozenset({"utilization_gpu", "utilization_memory"})  # as NVML in MIG mode


def _mix(x: int) -> int:
    """splitmix64's finaliser: a cheap, well-spread integer hash."""
    x = (x + 0x9E3779B97F4A7C15) & _MASK
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK
    return x ^ (x >> 31)


def _key(seed: int, *parts: int) -> int:
    k = _mix(seed & _MASK)
    for p in parts:
        k = _mix(k ^ (p & _MASK))
    return k


def _hash01(key: int, bucket: int) -> float:
    return _mix(key ^ (bucket & _MASK)) / 18446744073709551616.0


def _noise(key: int, t: float, period: float) -> float:
    """Smooth value noise in [0, 1): random values at multiples of `period`, eased between."""
    u = t / period
    i = math.floor(u)
    f = u - i
    s = f * f * (3.0 - 2.0 * f)
    a = _hash01(key, i)
    return a + (_hash01(key, i + 1) - a) * s


def _smoothstep(x: float) -> float:
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    return x * x * (3.0 - 2.0 * x)


def _in_window(elapsed: float, every: float, length: float) -> bool:
    """True during the last `length` seconds of each `every`-second period."""
    return length > 0 and elapsed > 0 and (elapsed % every) >= every - length


def _or(value: float | None, default: float) -> float:
    return default if value is None else value


class _Activity:
    __slots__ = ("util", "memory", "cpu", "rss", "checkpoint")

    def __init__(
        self, util: float, memory: float, cpu: float, rss: float, checkpoint: bool
    ) -> None:
        self.util = util
        self.memory = memory
        self.cpu = cpu
        self.rss = rss
        self.checkpoint = checkpoint


class _SimProcess:
    """One scenario process with its precomputed noise keys."""

    def __init__(self, spec: ProcessSpec, seed: int, ordinal: int) -> None:
        self.spec = spec
        self.util_key = _key(seed, _CH_PROC_UTIL, ordinal)
        self.cpu_key = _key(seed, _CH_PROC_CPU, ordinal)
        self.burst_key = _key(seed, _CH_PROC_BURST, ordinal)
        self.mem_key = _key(seed, _CH_PROC_MEM, ordinal)
        self.name = spec.cmdline[0].rsplit("/", 1)[-1] if spec.cmdline else None

    def alive(self, t: float) -> bool:
        s = self.spec
        return s.start_s <= t and (s.end_s is None or t < s.end_s)

    def util_at(self, t: float) -> float:
        """SM utilization only; the hot path of the temperature integral."""
        s = self.spec
        age = t - s.start_s
        w = s.workload
        if w == "training":
            ramp = _smoothstep(age / s.warmup_s) if s.warmup_s > 0 else 1.0
            u = s.util * (0.12 + 0.88 * ramp)
            steps = age - s.warmup_s
            if _in_window(steps, s.checkpoint_every_s, s.checkpoint_s):
                u *= 0.04
            elif _in_window(steps, s.eval_every_s, s.eval_s):
                u *= 0.55
            return u * (0.9 + 0.1 * _noise(self.util_key, t, 0.9))
        if w == "inference":
            if age < s.warmup_s:
                return s.util * 0.05
            burst = _noise(self.burst_key, t, 4.0)
            return s.util * (0.1 + 0.9 * burst * burst) * (0.9 + 0.1 * _noise(self.util_key, t, 0.7))
        if w == "interactive":
            burst = _noise(self.burst_key, t, 15.0)
            return s.util * _smoothstep((burst - 0.6) / 0.2)
        # graphics: a desktop compositor, a few percent
        return s.util * (0.4 + 0.6 * _noise(self.util_key, t, 2.0))

    def activity(self, t: float) -> _Activity:
        s = self.spec
        age = t - s.start_s
        util = self.util_at(t)
        checkpoint = False
        cpu_scale = 1.0
        if s.workload == "training":
            checkpoint = _in_window(age - s.warmup_s, s.checkpoint_every_s, s.checkpoint_s)
            tau = max(s.memory_ramp_s, 1e-6) / 3.0
            mem_frac = 0.3 + 0.7 * (1.0 - math.exp(-age / tau))
            cpu_scale = 1.8 if checkpoint else (0.6 + 0.4 * (util / max(s.util, 1.0)))
        elif s.workload == "inference":
            # Weights load during warm-up; the KV cache then breathes with traffic.
            load = age / s.warmup_s if s.warmup_s > 0 and age < s.warmup_s else 1.0
            mem_frac = load * (0.86 + 0.14 * _noise(self.mem_key, t, 30.0))
            cpu_scale = 0.3 + 0.7 * (util / max(s.util, 1.0))
        else:
            mem_frac = 1.0
            cpu_scale = 0.2 + 0.8 * (util / max(s.util, 1.0))
        cpu = s.cpu_percent * cpu_scale * (0.85 + 0.3 * _noise(self.cpu_key, t, 1.3))
        rss = s.rss * (0.5 + 0.5 * min(1.0, age / max(s.warmup_s, 1.0)))
        return _Activity(util, s.gpu_memory * mem_frac, cpu, rss, checkpoint)


class _SimGpu:
    def __init__(self, spec: GpuSpec, index: int, seed: int, procs: list[_SimProcess]) -> None:
        self.spec = spec
        self.index = index
        self.procs = procs
        facts: dict[str, object] = {
            "ecc_mode": spec.ecc_mode,
            "power_default_limit_w": _or(spec.power_default_limit_w, spec.power_limit_w),
            "power_min_limit_w": _or(spec.power_min_limit_w, float(round(spec.power_limit_w * 0.3))),
            "power_max_limit_w": _or(spec.power_max_limit_w, spec.power_limit_w),
            "pcie_max_gen": spec.pcie_max_gen,
            "pcie_max_width": spec.pcie_max_width,
            "bar1_total": spec.bar1_total,
        }
        for name in spec.unsupported & INFO_FIELDS:
            facts[name] = None
        self.info = DeviceInfo(
            index=index,
            name=spec.name,
            uuid=spec.uuid,
            pci_bus_id=spec.pci_bus_id,
            memory_total=spec.memory_total,
            compute_capability=spec.compute_capability,
            architecture=spec.architecture,
            power_limit_w=spec.power_limit_w,
            max_sm_clock_mhz=spec.max_sm_clock_mhz,
            max_mem_clock_mhz=spec.max_mem_clock_mhz,
            mig_mode=spec.mig_mode,
            **facts,  # type: ignore[arg-type]
        )
        self.unsupported = spec.unsupported | (_MIG_UNSUPPORTED if spec.mig else frozenset())
        self.util_key = _key(seed, _CH_UTIL, index)
        self.power_key = _key(seed, _CH_POWER, index)
        self.temp_key = _key(seed, _CH_TEMP, index)
        self.rx_key = _key(seed, _CH_PCIE_RX, index)
        self.tx_key = _key(seed, _CH_PCIE_TX, index)
        self.clock_key = _key(seed, _CH_CLOCK, index)
        self.idle_key = _key(seed, _CH_IDLE, index)
        # Fixed per-device character, from the seed: how memory-bound its jobs are.
        self.mem_intensity = 0.3 + 0.3 * _hash01(_key(seed, 99, index), 0)
        self._grid_cache: dict[int, float] = {}
        self._energy_marks: dict[int, float] = {0: 0.0}  # step -> joules before that step

    def lost(self, t: float) -> bool:
        return self.spec.lost_after_s is not None and t >= self.spec.lost_after_s

    def util_at(self, t: float) -> float:
        total = sum(p.util_at(t) for p in self.procs if p.alive(t))
        if total <= 0.0:
            return 2.0 * _noise(self.idle_key, t, 3.0) ** 4  # an idle GPU flickers at 0-1 %
        return min(100.0, total)

    def demand_w(self, util: float) -> float:
        """Power the load would draw without a cap: can exceed the limit, then the cap bites."""
        s = self.spec
        return s.idle_power_w + (s.power_limit_w * 1.1 - s.idle_power_w) * math.pow(util / 100.0, 0.85)

    def _grid_power_w(self, step: int) -> float:
        """Capped power at grid time step * _TEMP_STEP_S; memoised, as it is a pure function."""
        value = self._grid_cache.get(step)
        if value is None:
            if len(self._grid_cache) > 4 * _TEMP_STEPS:
                self._grid_cache.clear()
            demand = self.demand_w(self.util_at(step * _TEMP_STEP_S))
            value = self._grid_cache[step] = min(self.spec.power_limit_w, demand)
        return value

    def lagged_power_w(self, t: float) -> float:
        """Power filtered through a first-order lag, on a grid fixed to absolute time."""
        base = math.floor(t / _TEMP_STEP_S)
        alpha = math.exp(-_TEMP_STEP_S / _TEMP_TAU_S)
        acc = 0.0
        weight = 0.0
        w = 1.0
        for k in range(_TEMP_STEPS):
            acc += w * self._grid_power_w(base - k)
            weight += w
            w *= alpha
        return acc / weight

    def _step_power_w(self, step: int) -> float:
        return min(self.spec.power_limit_w, self.demand_w(self.util_at(step * _ENERGY_STEP_S)))

    def energy_j(self, t: float) -> float | None:
        """The counter at `t`: power on a 60 s grid, summed from t = 0 (see the module docstring)."""
        if t > ENERGY_HORIZON_S:
            return None
        start = self.spec.energy_at_start_j
        if t <= 0:
            return start
        step = math.floor(t / _ENERGY_STEP_S)
        mark = step // _ENERGY_CHECKPOINT * _ENERGY_CHECKPOINT
        marks = self._energy_marks
        known = max(k for k in marks if k <= mark)
        acc = marks[known]
        for k in range(known, step):
            if k % _ENERGY_CHECKPOINT == 0:
                marks[k] = acc
            acc += self._step_power_w(k) * _ENERGY_STEP_S
        frac = t - step * _ENERGY_STEP_S
        return round(start + acc + self._step_power_w(step) * frac, 3)

    def mig_devices(self, acts: list[tuple[_SimProcess, _Activity]]) -> tuple[MigDevice, ...]:
        out = []
        for i, m in enumerate(self.spec.mig):
            used = sum(int(a.memory) >> 20 << 20 for p, a in acts if p.spec.mig == i)
            used = min(used, m.memory_total)
            count = sum(1 for p, _ in acts if p.spec.mig == i)
            out.append(
                MigDevice(
                    index=i,
                    gpu_instance_id=m.gpu_instance_id,
                    compute_instance_id=m.compute_instance_id,
                    name=f"{self.spec.name} MIG {m.profile}",
                    profile=m.profile,
                    uuid=m.uuid,
                    memory_total=m.memory_total,
                    memory_used=used,
                    memory_free=m.memory_total - used,
                    bar1_total=m.bar1_total,
                    bar1_used=min(m.bar1_total, (2 + 2 * count) << 20),
                )
            )
        return tuple(out)

    def snapshot(self, t: float, acts: list[tuple[_SimProcess, _Activity]]) -> DeviceSnapshot:
        s = self.spec
        if self.lost(t):
            return DeviceSnapshot(
                info=self.info, sample=None, failed=LOST_REASON, unsupported=self.unsupported
            )
        busy = bool(acts)
        util = min(100.0, sum(a.util for _, a in acts)) if busy else self.util_at(t)
        demand = self.demand_w(util)
        limit = s.power_limit_w
        capped = demand > limit
        if capped:
            power = limit * (0.97 + 0.03 * _noise(self.power_key, t, 1.0))
            clock_factor = (limit / demand) ** 0.6
        else:
            power = min(limit, demand * (0.96 + 0.08 * _noise(self.power_key, t, 1.0)))
            clock_factor = 1.0
        heat = (self.lagged_power_w(t) - s.idle_power_w) / max(limit - s.idle_power_w, 1.0)
        temp = s.temp_idle_c + (s.temp_at_limit_c - s.temp_idle_c) * heat
        temp += _noise(self.temp_key, t, 5.0) - 0.5
        if util >= 3.0:
            sm = s.max_sm_clock_mhz * (0.93 + 0.04 * _noise(self.clock_key, t, 2.0)) * clock_factor
            sm_clock = max(s.idle_sm_clock_mhz, int(sm // 15 * 15))  # real clocks move in 15 MHz bins
            mem_clock = s.max_mem_clock_mhz
        else:
            sm_clock = s.idle_sm_clock_mhz
            mem_clock = s.idle_mem_clock_mhz if not busy else s.max_mem_clock_mhz
        # Same names as NvmlSource; an idle GPU is resting, not throttled: ().
        throttle: tuple[str, ...] = ("sw_power_cap",) if capped else ()
        used = sum(a.memory for _, a in acts)
        reserved = s.memory_reserved
        used_b = int(min(used, s.memory_total - reserved)) >> 20 << 20
        checkpoint = any(a.checkpoint for _, a in acts)
        rx = util * 1500.0 * (0.5 + _noise(self.rx_key, t, 1.0))
        tx = util * 200.0 * (0.5 + _noise(self.tx_key, t, 1.0)) + (900_000.0 if checkpoint else 0)
        values: dict[str, object] = {
            "utilization_gpu": round(util),
            "utilization_memory": round(util * self.mem_intensity),
            "memory_used": used_b,
            "memory_free": s.memory_total - reserved - used_b,
            "memory_total": s.memory_total,
            "memory_reserved": reserved,
            "temperature_c": round(temp),
            "fan_pct": max(30, min(100, round(30 + (temp - 45.0) * 2.0))),
            "power_w": round(power, 2),
            "power_limit_w": limit,
            "sm_clock_mhz": sm_clock,
            "mem_clock_mhz": mem_clock,
            "performance_state": s.load_pstate if util >= 3.0 else 8,
            "pcie_rx_kbs": int(rx),
            "pcie_tx_kbs": int(tx),
            "encoder_util": s.encoder_util if busy else 0,
            "decoder_util": s.decoder_util if busy else 0,
            "throttle_reasons": throttle,
            "ecc_volatile_uncorrected": 0 if s.ecc_mode else None,
            "persistence_mode": s.persistence_mode,
            "display_active": s.display_active,
            "compute_mode": s.compute_mode,
            "pcie_gen": s.pcie_max_gen if util >= 3.0 else s.pcie_idle_gen,
            "pcie_width": s.pcie_max_width,
            "bar1_used": min(s.bar1_total, (2 + 4 * len(acts)) << 20),
            "energy_j": self.energy_j(t),
        }
        for name in self.unsupported:
            if name in values:
                values[name] = None
        sample = DeviceSample(**values)  # type: ignore[arg-type]
        return DeviceSnapshot(
            info=self.info,
            sample=sample,
            unsupported=self.unsupported,
            mig_devices=self.mig_devices(acts),
        )


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
        self._epoch = scenario.start_timestamp if scenario.start_timestamp is not None else (
            default_epoch
        )
        seed = scenario.seed
        self._procs = [_SimProcess(p, seed, i) for i, p in enumerate(scenario.processes)]
        self._gpus = [
            _SimGpu(g, i, seed, [p for p in self._procs if p.spec.gpu == i])
            for i, g in enumerate(scenario.gpus)
        ]
        self._core_keys = [_key(seed, _CH_CORE, c) for c in range(scenario.host.cpu_count)]
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
        all_acts: list[tuple[_SimProcess, _Activity]] = []
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

    def _process(self, p: _SimProcess, a: _Activity, t: float) -> GpuProcess:
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
        if not s.host_visible:
            return GpuProcess(
                gpu_index=s.gpu,
                pid=s.pid,
                type=s.type,
                gpu_memory=gpu_mem,
                sm_util=sm_util,
                mem_util=mem_util,
                host_visible=False,
                gpu_instance_id=gi,
                compute_instance_id=ci,
            )
        return GpuProcess(
            gpu_index=s.gpu,
            pid=s.pid,
            type=s.type,
            gpu_memory=gpu_mem,
            sm_util=sm_util,
            mem_util=mem_util,
            gpu_instance_id=gi,
            compute_instance_id=ci,
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

    def _host(self, t: float, acts: list[tuple[_SimProcess, _Activity]]) -> HostSnapshot:
        h = self.scenario.host
        busy = h.cpu_count * h.base_cpu_percent / 100.0 + sum(
            a.cpu / 100.0 for p, a in acts if not self._gpus[p.spec.gpu].lost(t)
        )
        busy = min(float(h.cpu_count), busy)
        weights = [0.3 + _noise(k, t, 2.0) ** 2 for k in self._core_keys]
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
            round(min(100.0, 100.0 * c + 3.0 * _noise(self._core_keys[i], t, 0.8)), 1)
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
