"""The series the cluster source reads: dcgm-exporter's and gputui's metric names, and the
labels that say which host and GPU a series belongs to.

One module for the names so the reader (source.py), its assembly (assemble.py)
and the MIG reader (mig.py) agree on them without importing one another.
"""

from __future__ import annotations

from gputui.core.textsafe import visible
from gputui.sources.prometheus.bounds import index_label

MIB = 1 << 20

# DeviceSample field <- metric, with the factor to gputui's units (bytes, W, MHz, %).
SAMPLE_METRICS: dict[str, tuple[str, float]] = {
    "DCGM_FI_DEV_GPU_UTIL": ("utilization_gpu", 1.0),
    "DCGM_FI_DEV_MEM_COPY_UTIL": ("utilization_memory", 1.0),
    "DCGM_FI_DEV_FB_USED": ("memory_used", MIB),
    "DCGM_FI_DEV_FB_FREE": ("memory_free", MIB),
    "DCGM_FI_DEV_FB_RESERVED": ("memory_reserved", MIB),
    "DCGM_FI_DEV_GPU_TEMP": ("temperature_c", 1.0),
    "DCGM_FI_DEV_POWER_USAGE": ("power_w", 1.0),
    "DCGM_FI_DEV_SM_CLOCK": ("sm_clock_mhz", 1.0),
    "DCGM_FI_DEV_MEM_CLOCK": ("mem_clock_mhz", 1.0),
    "DCGM_FI_DEV_ENC_UTIL": ("encoder_util", 1.0),
    "DCGM_FI_DEV_DEC_UTIL": ("decoder_util", 1.0),
    "DCGM_FI_DEV_PCIE_TX_THROUGHPUT": ("pcie_tx_kbs", 1.0),
    "DCGM_FI_DEV_PCIE_RX_THROUGHPUT": ("pcie_rx_kbs", 1.0),
    "gputui_gpu_fan_percent": ("fan_pct", 1.0),
    "gputui_gpu_power_limit_watts": ("power_limit_w", 1.0),
    "gputui_gpu_memory_total_bytes": ("memory_total", 1.0),
    "gputui_gpu_performance_state": ("performance_state", 1.0),
    # GPM's figures as dcgm-exporter (DCGM's profiling module) and gputui export them: 0-1
    "DCGM_FI_PROF_SM_ACTIVE": ("sm_active_pct", 100.0),
    "DCGM_FI_PROF_SM_OCCUPANCY": ("sm_occupancy_pct", 100.0),
    "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": ("tensor_active_pct", 100.0),
    "DCGM_FI_PROF_DRAM_ACTIVE": ("dram_active_pct", 100.0),
}
FLOAT_FIELDS = {
    "power_w", "power_limit_w", "sm_active_pct", "sm_occupancy_pct", "tensor_active_pct",
    "dram_active_pct",
}
GPU_UP = "gputui_gpu_up"
CARD_INFO = "gputui_gpu_card_info"
THROTTLE = "gputui_gpu_throttle_reason"
PROC_MEMORY = "gputui_process_gpu_memory_bytes"
PROC_SM = "gputui_process_sm_util_percent"
LAST_POLL = "gputui_exporter_last_poll_timestamp_seconds"
POLL_INTERVAL = "gputui_exporter_poll_interval_seconds"
# Labelled extras, read with all their labels in one query (only gputui exporters have them).
LABELLED_METRICS: tuple[str, ...] = (
    CARD_INFO,
    THROTTLE,
    PROC_MEMORY,
    PROC_SM,
    LAST_POLL,
    POLL_INTERVAL,
)
# What the cluster view draws; one-shot commands (snapshot, fit) read every SAMPLE_METRICS field.
VIEW_METRICS: tuple[str, ...] = (
    "DCGM_FI_DEV_GPU_UTIL",
    "DCGM_FI_DEV_FB_USED",
    "DCGM_FI_DEV_FB_FREE",
    "DCGM_FI_DEV_FB_RESERVED",
    "DCGM_FI_DEV_GPU_TEMP",
    "DCGM_FI_DEV_POWER_USAGE",
    "gputui_gpu_memory_total_bytes",
    "gputui_gpu_power_limit_watts",
    "DCGM_FI_PROF_SM_ACTIVE",
)
VALUE_METRICS: tuple[str, ...] = (*SAMPLE_METRICS, GPU_UP, *LABELLED_METRICS)
# A value query keeps only what joins it to its GPU: the rest of the labels come once, from
# the identity query, instead of once per metric (at 512 GPUs that is most of the bytes).
JOIN_LABELS = "Hostname, hostname, instance, gpu"
IDENTITY_LABELS = f"{JOIN_LABELS}, modelName, UUID, uuid, pci_bus_id"
# MIG: dcgm-exporter (and gputui's exporter) export a MIG GPU's memory once per MIG device
# (GPU_I_ID, GPU_I_PROFILE; gputui adds its `mig` name) and none for the card. These metrics
# keep those labels, so the reader sums a card's memory over its instances and lists them.
MIG_METRICS = frozenset(("DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE"))
# Series a MIG GPU has per GPU instance: its memory (summed into the card's) and GPM's ratios
# (kept per instance; a card in MIG mode has no ratio of its own).
PER_INSTANCE_METRICS = MIG_METRICS | frozenset(
    m for m in SAMPLE_METRICS if m.startswith("DCGM_FI_PROF_")
)
MIG_JOIN_LABELS = f"{JOIN_LABELS}, GPU_I_ID, GPU_I_PROFILE, mig"


def join_labels(metric: str) -> str:
    """The labels a value query keeps for `metric`: its GPU's, and its MIG device's."""
    return MIG_JOIN_LABELS if metric in PER_INSTANCE_METRICS else JOIN_LABELS


def host_of(labels: dict[str, str]) -> str:
    return visible(
        labels.get("Hostname") or labels.get("hostname") or labels.get("instance") or "unknown"
    )


def uuid_of(labels: dict[str, str]) -> str | None:
    value = labels.get("UUID") or labels.get("uuid")
    return visible(value) if value else None


def gpu_index(labels: dict[str, str]) -> int | None:
    return index_label(labels.get("gpu"))


def instance_host(labels: dict[str, str]) -> str:
    """Exporter-level series (no gpu label) join hosts by Hostname when given, else instance."""
    return labels.get("Hostname") or labels.get("hostname") or labels.get("instance", "")


def gputui_first(labels: dict[str, str], gputui_instances: set[str]) -> tuple[bool, str]:
    """Sort key: a GPU seen through gputui and dcgm-exporter (a mixed host) takes gputui's
    series first, the rest by instance, so the first series kept per GPU is the same one in
    every query."""
    instance = labels.get("instance", "")
    return (instance not in gputui_instances, instance)
