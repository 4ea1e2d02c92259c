"""One simulated GPU over time: utilization from its processes, power capped at its
limit, temperature trailing power, clocks, PCIe, energy and its MIG devices."""

from __future__ import annotations

import math

from gputui.model.snapshot import DeviceInfo, DeviceSample, DeviceSnapshot, MigDevice
from gputui.sources.simulated.gpm import GPM_FIELDS, gpm_values, has_gpm
from gputui.sources.simulated.noise import (
    CH_CLOCK,
    CH_IDLE,
    CH_PCIE_RX,
    CH_PCIE_TX,
    CH_POWER,
    CH_TEMP,
    CH_UTIL,
    hash01,
    noise_key,
    or_default,
    value_noise,
)
from gputui.sources.simulated.process import Activity, SimProcess
from gputui.sources.simulated.scenario import INFO_FIELDS
from gputui.sources.simulated.spec import GpuSpec

LOST_REASON = "GPU is lost"

_TEMP_TAU_S = 40.0  # thermal time constant: temperature trails power by about this much
_TEMP_STEP_S = 4.0
_TEMP_STEPS = 40  # 160 s of power history, four time constants
_ENERGY_STEP_S = 60.0
_ENERGY_CHECKPOINT = 64  # memoise the running sum every 64 steps (about an hour)
ENERGY_HORIZON_S = 30 * 86400.0
_MIG_UNSUPPORTED = frozenset({"utilization_gpu", "utilization_memory"})  # as NVML in MIG mode


class SimGpu:
    def __init__(self, spec: GpuSpec, index: int, seed: int, procs: list[SimProcess]) -> None:
        self.spec = spec
        self.index = index
        self.procs = procs
        facts: dict[str, object] = {
            "ecc_mode": spec.ecc_mode,
            "power_default_limit_w": or_default(spec.power_default_limit_w, spec.power_limit_w),
            "power_min_limit_w": or_default(
                spec.power_min_limit_w, float(round(spec.power_limit_w * 0.3))
            ),
            "power_max_limit_w": or_default(spec.power_max_limit_w, spec.power_limit_w),
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
        self.has_gpm = has_gpm(spec) and not spec.mig  # per-instance GPM is NVML's alone here
        if not self.has_gpm:
            self.unsupported |= frozenset(GPM_FIELDS)
        self.util_key = noise_key(seed, CH_UTIL, index)
        self.power_key = noise_key(seed, CH_POWER, index)
        self.temp_key = noise_key(seed, CH_TEMP, index)
        self.rx_key = noise_key(seed, CH_PCIE_RX, index)
        self.tx_key = noise_key(seed, CH_PCIE_TX, index)
        self.clock_key = noise_key(seed, CH_CLOCK, index)
        self.idle_key = noise_key(seed, CH_IDLE, index)
        # Fixed per-device character, from the seed: how memory-bound its jobs are.
        self.mem_intensity = 0.3 + 0.3 * hash01(noise_key(seed, 99, index), 0)
        self._grid_cache: dict[int, float] = {}
        self._energy_marks: dict[int, float] = {0: 0.0}  # step -> joules before that step

    def lost(self, t: float) -> bool:
        return self.spec.lost_after_s is not None and t >= self.spec.lost_after_s

    def util_at(self, t: float) -> float:
        total = sum(p.util_at(t) for p in self.procs if p.alive(t))
        if total <= 0.0:
            return 2.0 * value_noise(self.idle_key, t, 3.0) ** 4  # an idle GPU flickers at 0-1 %
        return min(100.0, total)

    def demand_w(self, util: float) -> float:
        """Power the load would draw without a cap: can exceed the limit, then the cap bites."""
        s = self.spec
        return s.idle_power_w + (s.power_limit_w * 1.1 - s.idle_power_w) * math.pow(
            util / 100.0, 0.85
        )

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

    def mig_devices(self, acts: list[tuple[SimProcess, Activity]]) -> tuple[MigDevice, ...]:
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

    def snapshot(self, t: float, acts: list[tuple[SimProcess, Activity]]) -> DeviceSnapshot:
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
            power = limit * (0.97 + 0.03 * value_noise(self.power_key, t, 1.0))
            clock_factor = (limit / demand) ** 0.6
        else:
            power = min(limit, demand * (0.96 + 0.08 * value_noise(self.power_key, t, 1.0)))
            clock_factor = 1.0
        heat = (self.lagged_power_w(t) - s.idle_power_w) / max(limit - s.idle_power_w, 1.0)
        temp = s.temp_idle_c + (s.temp_at_limit_c - s.temp_idle_c) * heat
        temp += value_noise(self.temp_key, t, 5.0) - 0.5
        if util >= 3.0:
            sm = (
                s.max_sm_clock_mhz
                * (0.93 + 0.04 * value_noise(self.clock_key, t, 2.0))
                * clock_factor
            )
            sm_clock = max(
                s.idle_sm_clock_mhz, int(sm // 15 * 15)
            )  # real clocks move in 15 MHz bins
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
        rx = util * 1500.0 * (0.5 + value_noise(self.rx_key, t, 1.0))
        tx = util * 200.0 * (0.5 + value_noise(self.tx_key, t, 1.0)) + (
            900_000.0 if checkpoint else 0
        )
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
        if self.has_gpm:
            values.update(gpm_values(acts, util, values["utilization_memory"]))  # type: ignore[arg-type]
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
