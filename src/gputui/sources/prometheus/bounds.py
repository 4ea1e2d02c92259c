"""The range each metric the cluster reader takes can have; outside it a reading is N/A.

prometheus_shapes.py already turns non-finite and astronomically large
values into NaN; this is the second, per-metric bound: a utilisation of
-5 % or 4000 %, memory in exabytes or a GPU index of 10**40 is not a reading
gputui can show as a confident number, so it is treated as missing.
"""

from __future__ import annotations

import math

_MIB = 1 << 20
_PIB_IN_MIB = 1 << 30
_PERCENT = (0.0, 100.0)

# metric -> (lowest, highest), in the metric's own unit (before the reader's scaling).
METRIC_BOUNDS: dict[str, tuple[float, float]] = {
    "DCGM_FI_DEV_GPU_UTIL": _PERCENT,
    "DCGM_FI_DEV_MEM_COPY_UTIL": _PERCENT,
    "DCGM_FI_DEV_FB_USED": (0.0, _PIB_IN_MIB),
    "DCGM_FI_DEV_FB_FREE": (0.0, _PIB_IN_MIB),
    "DCGM_FI_DEV_FB_RESERVED": (0.0, _PIB_IN_MIB),
    "DCGM_FI_DEV_GPU_TEMP": (0.0, 200.0),  # NVML's temperature is unsigned
    "DCGM_FI_DEV_POWER_USAGE": (0.0, 100_000.0),
    "DCGM_FI_DEV_SM_CLOCK": (0.0, 100_000.0),
    "DCGM_FI_DEV_MEM_CLOCK": (0.0, 100_000.0),
    "DCGM_FI_DEV_ENC_UTIL": _PERCENT,
    "DCGM_FI_DEV_DEC_UTIL": _PERCENT,
    "DCGM_FI_DEV_PCIE_TX_THROUGHPUT": (0.0, 1e9),  # KB/s
    "DCGM_FI_DEV_PCIE_RX_THROUGHPUT": (0.0, 1e9),
    "gputui_gpu_fan_percent": _PERCENT,
    "DCGM_FI_PROF_SM_ACTIVE": (0.0, 1.0),  # DCGM's profiling ratios
    "DCGM_FI_PROF_SM_OCCUPANCY": (0.0, 1.0),
    "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": (0.0, 1.0),
    "DCGM_FI_PROF_DRAM_ACTIVE": (0.0, 1.0),
    "gputui_gpu_power_limit_watts": (0.0, 100_000.0),
    "gputui_gpu_memory_total_bytes": (0.0, float(_PIB_IN_MIB * _MIB)),
    "gputui_gpu_performance_state": (0.0, 32.0),
    "gputui_process_gpu_memory_bytes": (0.0, float(_PIB_IN_MIB * _MIB)),
    "gputui_process_sm_util_percent": _PERCENT,
    "gputui_exporter_poll_interval_seconds": (0.0, 86_400.0),
    "gputui_exporter_last_poll_timestamp_seconds": (0.0, float(1 << 35)),
}
TIMESTAMP_BOUNDS = (0.0, float(1 << 35))  # timestamp() of a sample: 1970 .. 3058
MAX_INDEX_DIGITS = 9  # a GPU index or a pid label; longer is not one


def bounded(metric: str, value: float) -> float:
    """The value, or NaN when it is outside the metric's range (unknown metrics: as given)."""
    lo, hi = METRIC_BOUNDS.get(metric, (-math.inf, math.inf))
    return value if lo <= value <= hi else math.nan


def timestamp(value: float) -> float:
    lo, hi = TIMESTAMP_BOUNDS
    return value if lo <= value <= hi else math.nan


def index_label(text: str | None) -> int | None:
    """A label that holds a small non-negative integer (gpu, pid); None for anything else."""
    if text is None or not text.isascii() or not text.isdigit() or len(text) > MAX_INDEX_DIGITS:
        return None
    return int(text)
