"""The range of every scenario field: what scenario.py accepts, and why each bound."""

from __future__ import annotations

# Issue 8: Wide enough for any real machine; narrow enough
# that the simulation's arithmetic stays finite (no inf, no OverflowError in a poll,
# a timestamp `time.localtime` can show) and one poll stays cheap (cores, processes).
MAX_SIZE = 1 << 50  # 1 PiB, for every byte count
MAX_CPUS = 4096  # a per-core row is simulated for each, every poll
MAX_GPUS = 64
MAX_PROCESSES = 1024
MAX_WATTS = 10_000.0
MIN_POWER_LIMIT_W = 1.0
MAX_CLOCK_MHZ = 100_000
MAX_PID = 1 << 22  # Linux's PID_MAX_LIMIT
MAX_SECONDS = 1e9  # about 31 years: times and durations within a scenario
MIN_SECONDS = 1e-3  # a duration is 0 or at least this (no subnormal periods)
MAX_TIMESTAMP = 1e11  # the year 5138; leaves room for MAX_SECONDS of simulated time
SEED_RANGE = (-(1 << 63), (1 << 64) - 1)
MAX_TEXT = 256  # names, users, versions, identifiers
MAX_NOTICE = 1024
MAX_COMMAND = 64 << 10
MAX_LIST = 64  # notices, unsupported fields
MAX_MIG = 7  # MIG devices per GPU (an A100/H100 holds at most 7)
MAX_PCIE_GEN = 8
MAX_PCIE_WIDTH = 32
MAX_FILE_BYTES = 4 << 20
