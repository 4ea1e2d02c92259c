"""Deterministic noise for the simulator: every value a pure function of (seed, channel, t).

A hash of (seed, channel, time bucket) (splitmix64), eased between buckets, never a
stateful generator: the snapshot at t=42 is the same whatever was polled before it.
"""

from __future__ import annotations

import math

MASK = (1 << 64) - 1

# Noise channels: distinct streams so that e.g. power noise is not a copy of utilization noise.
CH_UTIL = 1
CH_POWER = 2
CH_TEMP = 3
CH_PCIE_RX = 4
CH_PCIE_TX = 5
CH_CLOCK = 6
CH_PROC_UTIL = 10
CH_PROC_CPU = 11
CH_PROC_BURST = 12
CH_PROC_MEM = 13
CH_CORE = 20
CH_IDLE = 21


def mix64(x: int) -> int:
    """splitmix64's finaliser: a cheap, well-spread integer hash."""
    x = (x + 0x9E3779B97F4A7C15) & MASK
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & MASK
    return x ^ (x >> 31)


def noise_key(seed: int, *parts: int) -> int:
    k = mix64(seed & MASK)
    for p in parts:
        k = mix64(k ^ (p & MASK))
    return k


def hash01(key: int, bucket: int) -> float:
    return mix64(key ^ (bucket & MASK)) / 18446744073709551616.0


def value_noise(key: int, t: float, period: float) -> float:
    """Smooth value noise in [0, 1): random values at multiples of `period`, eased between."""
    u = t / period
    i = math.floor(u)
    f = u - i
    s = f * f * (3.0 - 2.0 * f)
    a = hash01(key, i)
    return a + (hash01(key, i + 1) - a) * s


def smoothstep(x: float) -> float:
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    return x * x * (3.0 - 2.0 * x)


def in_window(elapsed: float, every: float, length: float) -> bool:
    """True during the last `length` seconds of each `every`-second period."""
    return length > 0 and elapsed > 0 and (elapsed % every) >= every - length


def or_default(value: float | None, default: float) -> float:
    return default if value is None else value
