"""One simulated process over time: its GPU and CPU load, memory, and the training
phases (warm-up, evaluation, checkpoints) a scenario gives it."""

from __future__ import annotations

import math

from gputui.sources.simulated.noise import (
    CH_PROC_BURST,
    CH_PROC_CPU,
    CH_PROC_MEM,
    CH_PROC_UTIL,
    in_window,
    noise_key,
    smoothstep,
    value_noise,
)
from gputui.sources.simulated.spec import ProcessSpec


class Activity:
    __slots__ = ("util", "memory", "cpu", "rss", "checkpoint")

    def __init__(
        self, util: float, memory: float, cpu: float, rss: float, checkpoint: bool
    ) -> None:
        self.util = util
        self.memory = memory
        self.cpu = cpu
        self.rss = rss
        self.checkpoint = checkpoint


class SimProcess:
    """One scenario process with its precomputed noise keys."""

    def __init__(self, spec: ProcessSpec, seed: int, ordinal: int) -> None:
        self.spec = spec
        self.util_key = noise_key(seed, CH_PROC_UTIL, ordinal)
        self.cpu_key = noise_key(seed, CH_PROC_CPU, ordinal)
        self.burst_key = noise_key(seed, CH_PROC_BURST, ordinal)
        self.mem_key = noise_key(seed, CH_PROC_MEM, ordinal)
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
            ramp = smoothstep(age / s.warmup_s) if s.warmup_s > 0 else 1.0
            u = s.util * (0.12 + 0.88 * ramp)
            steps = age - s.warmup_s
            if in_window(steps, s.checkpoint_every_s, s.checkpoint_s):
                u *= 0.04
            elif in_window(steps, s.eval_every_s, s.eval_s):
                u *= 0.55
            return u * (0.9 + 0.1 * value_noise(self.util_key, t, 0.9))
        if w == "inference":
            if age < s.warmup_s:
                return s.util * 0.05
            burst = value_noise(self.burst_key, t, 4.0)
            return (
                s.util
                * (0.1 + 0.9 * burst * burst)
                * (0.9 + 0.1 * value_noise(self.util_key, t, 0.7))
            )
        if w == "interactive":
            burst = value_noise(self.burst_key, t, 15.0)
            return s.util * smoothstep((burst - 0.6) / 0.2)
        # graphics: a desktop compositor, a few percent
        return s.util * (0.4 + 0.6 * value_noise(self.util_key, t, 2.0))

    def activity(self, t: float) -> Activity:
        s = self.spec
        age = t - s.start_s
        util = self.util_at(t)
        checkpoint = False
        cpu_scale = 1.0
        if s.workload == "training":
            checkpoint = in_window(age - s.warmup_s, s.checkpoint_every_s, s.checkpoint_s)
            tau = max(s.memory_ramp_s, 1e-6) / 3.0
            mem_frac = 0.3 + 0.7 * (1.0 - math.exp(-age / tau))
            cpu_scale = 1.8 if checkpoint else (0.6 + 0.4 * (util / max(s.util, 1.0)))
        elif s.workload == "inference":
            # Weights load during warm-up; the KV cache then breathes with traffic.
            load = age / s.warmup_s if s.warmup_s > 0 and age < s.warmup_s else 1.0
            mem_frac = load * (0.86 + 0.14 * value_noise(self.mem_key, t, 30.0))
            cpu_scale = 0.3 + 0.7 * (util / max(s.util, 1.0))
        else:
            mem_frac = 1.0
            cpu_scale = 0.2 + 0.8 * (util / max(s.util, 1.0))
        cpu = s.cpu_percent * cpu_scale * (0.85 + 0.3 * value_noise(self.cpu_key, t, 1.3))
        rss = s.rss * (0.5 + 0.5 * min(1.0, age / max(s.warmup_s, 1.0)))
        return Activity(util, s.gpu_memory * mem_frac, cpu, rss, checkpoint)
