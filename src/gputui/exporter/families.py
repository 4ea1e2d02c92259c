"""A Snapshot as Prometheus metric families, under dcgm-exporter's names, units and labels.

Why dcgm-exporter's names: existing Grafana dashboards and alert rules written
for NVIDIA's exporter then work unchanged on a gputui host. The mapping:

    DCGM_FI_DEV_GPU_UTIL         %     utilization_gpu
    DCGM_FI_DEV_MEM_COPY_UTIL    %     utilization_memory
    DCGM_FI_DEV_FB_USED/FREE/RESERVED  MiB
    DCGM_FI_DEV_GPU_TEMP         C
    DCGM_FI_DEV_POWER_USAGE      W
    DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION  mJ since driver load (a counter)
    DCGM_FI_DEV_SM_CLOCK/MEM_CLOCK  MHz
    DCGM_FI_DEV_ENC_UTIL/DEC_UTIL   %
    DCGM_FI_DEV_PCIE_TX/RX_THROUGHPUT  KB/s, NVML's PCIe sample

Rules:
- A field the device cannot report (None in the snapshot) has no sample at
  all, never 0: a dashboard then shows "no data" instead of a false idle GPU.
- A failed (lost) GPU exports `gputui_gpu_up 0` and nothing else for it.
- The energy counter is exported untyped: prometheus_client appends `_total`
  to every counter's name, which would break dcgm's name; Prometheus applies
  rate() to untyped series all the same.
- Command lines carry secrets (tokens, passwords in arguments): the process
  series carry only the command *name* unless `full_cmdline` is asked for.
- Every string from outside (NVML names, user and command names) passes
  through `textsafe.visible` here, once.
- MIG, as dcgm-exporter: a GPU in MIG mode with MIG devices has its memory
  (FB_USED, FB_FREE) once per MIG device, labelled `GPU_I_PROFILE` and
  `GPU_I_ID` (the GPU instance id), and none for the card; its processes carry
  the same labels. Both also carry `mig`, gputui's name of the MIG device
  ("0:2", model/mig.py), so a reader can show what the dashboard shows.
  Device-wide readings (temperature, power, clocks) stay one series per GPU:
  dcgm-exporter repeats them on every instance, which makes a `sum()` over a
  host count a MIG GPU's power once per instance.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from prometheus_client.core import GaugeMetricFamily, InfoMetricFamily, Metric

from gputui.core.textsafe import visible
from gputui.model.mig import mig_label
from gputui.model.snapshot import (
    THROTTLE_REASONS,
    DeviceSample,
    DeviceSnapshot,
    GpuProcess,
    Snapshot,
)

MIB = 1 << 20
DCGM_LABELS = ("gpu", "UUID", "pci_bus_id", "device", "modelName", "Hostname")
PROCESS_LABELS = ("gpu", "UUID", "Hostname", "pid", "user", "container", "command")


@dataclass(frozen=True, slots=True)
class DcgmField:
    name: str
    help: str
    read: str  # DeviceSample attribute
    scale: float = 1.0


def _mib(value: int | None) -> float | None:
    return None if value is None else value / MIB


DCGM_FIELDS: tuple[DcgmField, ...] = (
    DcgmField("DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %).", "utilization_gpu"),
    DcgmField("DCGM_FI_DEV_MEM_COPY_UTIL", "Memory utilization (in %).", "utilization_memory"),
    DcgmField("DCGM_FI_DEV_FB_USED", "Framebuffer memory used (in MiB).", "memory_used", 1 / MIB),
    DcgmField("DCGM_FI_DEV_FB_FREE", "Framebuffer memory free (in MiB).", "memory_free", 1 / MIB),
    DcgmField(
        "DCGM_FI_DEV_FB_RESERVED",
        "Framebuffer memory reserved (in MiB).",
        "memory_reserved",
        1 / MIB,
    ),
    DcgmField("DCGM_FI_DEV_GPU_TEMP", "GPU temperature (in C).", "temperature_c"),
    DcgmField("DCGM_FI_DEV_POWER_USAGE", "Power draw (in W).", "power_w"),
    DcgmField("DCGM_FI_DEV_SM_CLOCK", "SM clock frequency (in MHz).", "sm_clock_mhz"),
    DcgmField("DCGM_FI_DEV_MEM_CLOCK", "Memory clock frequency (in MHz).", "mem_clock_mhz"),
    DcgmField("DCGM_FI_DEV_ENC_UTIL", "Encoder utilization (in %).", "encoder_util"),
    DcgmField("DCGM_FI_DEV_DEC_UTIL", "Decoder utilization (in %).", "decoder_util"),
    DcgmField(
        "DCGM_FI_DEV_PCIE_TX_THROUGHPUT",
        "PCIe TX throughput (in KB/s), NVML's sample.",
        "pcie_tx_kbs",
    ),
    DcgmField(
        "DCGM_FI_DEV_PCIE_RX_THROUGHPUT",
        "PCIe RX throughput (in KB/s), NVML's sample.",
        "pcie_rx_kbs",
    ),
    # GPM (Hopper and later), on DCGM's 0-1 scale; no sample at all on a GPU without GPM.
    DcgmField(
        "DCGM_FI_PROF_SM_ACTIVE",
        "Ratio of cycles an SM has at least 1 warp assigned (NVML GPM, 0-1).",
        "sm_active_pct",
        0.01,
    ),
    DcgmField(
        "DCGM_FI_PROF_SM_OCCUPANCY",
        "Ratio of warps resident on an SM to the maximum (NVML GPM, 0-1).",
        "sm_occupancy_pct",
        0.01,
    ),
    DcgmField(
        "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
        "Ratio of cycles any tensor pipe is active (NVML GPM, 0-1).",
        "tensor_active_pct",
        0.01,
    ),
    DcgmField(
        "DCGM_FI_PROF_DRAM_ACTIVE",
        "Ratio of cycles the device memory interface is active (NVML GPM, 0-1).",
        "dram_active_pct",
        0.01,
    ),
)
ENERGY = "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"
THROTTLE_NAMES: tuple[str, ...] = tuple(name for _, name in THROTTLE_REASONS if name != "idle")
# A MIG GPU's fields exported once per MIG device (MigDevice attribute), none for the card.
MIG_FIELDS = {"DCGM_FI_DEV_FB_USED": "memory_used", "DCGM_FI_DEV_FB_FREE": "memory_free"}
# GPM per GPU instance, as dcgm-exporter's profiling fields on a MIG GPU (0-1, none for the card:
# a card's ratio is not its instances' sum, and a `max by gpu` over both would mix them).
MIG_RATIOS = {f.name: f.read for f in DCGM_FIELDS if f.name.startswith("DCGM_FI_PROF_")}
MIG_CARD_SKIPPED = (*MIG_FIELDS, *MIG_RATIOS, "DCGM_FI_DEV_FB_RESERVED")


@dataclass(frozen=True, slots=True)
class FitAnswer:
    """The largest batch of one configured model that fits in one GPU's free memory now,
    or in one MIG instance's (`gpu_instance_id` and `profile` set, as dcgm-exporter's
    GPU_I_ID / GPU_I_PROFILE labels)."""

    model: str
    gpu_index: int
    precision: str
    max_batch: int
    gpu_instance_id: int | None = None
    profile: str | None = None


@dataclass(frozen=True, slots=True)
class CardName:
    """What the catalog says a GPU is (card None when only the architecture is known)."""

    card: str | None
    architecture: str | None


def dcgm_labels(dev: DeviceSnapshot, hostname: str) -> dict[str, str]:
    info = dev.info
    return {
        "gpu": str(info.index),
        "UUID": visible(info.uuid or ""),
        "pci_bus_id": visible(info.pci_bus_id or ""),
        "device": f"nvidia{info.index}",
        "modelName": visible(info.name),
        "Hostname": visible(hostname),
    }


def build_families(
    snapshot: Snapshot,
    *,
    hostname: str,
    fit: Sequence[FitAnswer] = (),
    cards: Mapping[int, CardName] | None = None,
    full_cmdline: bool = False,
) -> list[Metric]:
    """Every family for one poll; families with no sample are left out entirely.

    The energy counter is the poll's own reading (`DeviceSample.energy_j`): one
    NVML read per GPU per poll, the same the dashboard shows.
    """
    cards = cards or {}
    dcgm = {f.name: GaugeMetricFamily(f.name, f.help, labels=DCGM_LABELS) for f in DCGM_FIELDS}
    energy = Metric(ENERGY, "Total energy consumption since boot (in mJ), a counter.", "unknown")
    up = GaugeMetricFamily(
        "gputui_gpu_up",
        "1 while the GPU answers NVML, 0 once it failed (lost).",
        labels=DCGM_LABELS,
    )
    throttle = GaugeMetricFamily(
        "gputui_gpu_throttle_reason",
        "1 while the clocks are held down for this reason, else 0.",
        labels=(*DCGM_LABELS, "reason"),
    )
    pstate = GaugeMetricFamily(
        "gputui_gpu_performance_state", "P-state: 0 (P0, fastest) to 15.", labels=DCGM_LABELS
    )
    fan = GaugeMetricFamily("gputui_gpu_fan_percent", "Fan speed (in %).", labels=DCGM_LABELS)
    limit = GaugeMetricFamily(
        "gputui_gpu_power_limit_watts", "Enforced power limit (in W).", labels=DCGM_LABELS
    )
    total = GaugeMetricFamily(
        "gputui_gpu_memory_total_bytes", "Framebuffer memory total (in bytes).", labels=DCGM_LABELS
    )
    card = InfoMetricFamily(
        "gputui_gpu_card",
        "What the gputui catalog says this GPU is: card and architecture.",
        labels=(*DCGM_LABELS, "card", "architecture", "compute_capability"),
    )
    labels_of: dict[int, dict[str, str]] = {}
    for dev in snapshot.devices:
        labels = dcgm_labels(dev, hostname)
        labels_of[dev.index] = labels
        values = tuple(labels[k] for k in DCGM_LABELS)
        if dev.sample is None or dev.failed is not None:
            up.add_metric(values, 0.0)
            continue
        up.add_metric(values, 1.0)
        s = dev.sample
        skipped = MIG_CARD_SKIPPED if dev.mig_devices else ()
        for f in DCGM_FIELDS:
            raw = getattr(s, f.read)
            if raw is not None and f.name not in skipped:
                dcgm[f.name].add_metric(values, float(raw) * f.scale)
        _mig_memory(dev, labels, dcgm)
        if s.energy_j is not None:
            # NVML counts whole mJ; the sample holds J as a float: round back to the count
            energy.add_sample(ENERGY, labels, float(round(s.energy_j * 1000.0)))
        _device_extras(s, dev, values, throttle, pstate, fan, limit, total)
        named = cards.get(dev.index) or CardName(None, None)
        card.add_metric(
            values,
            {
                "card": named.card or "",
                "architecture": named.architecture or visible(dev.info.architecture or ""),
                "compute_capability": visible(dev.info.compute_capability or ""),
            },
        )
    families: list[Metric] = [*dcgm.values(), energy, up, throttle, pstate, fan, limit, total, card]
    devices = {d.index: d for d in snapshot.devices}
    families += _process_families(snapshot.processes, labels_of, full_cmdline, devices)
    families.append(_fit_family(fit, labels_of, devices))
    return [m for m in families if m.samples]


def mig_labels(dev: DeviceSnapshot, gpu_instance_id: int | None) -> dict[str, str] | None:
    """dcgm-exporter's labels of a MIG device of `dev` (by its GPU instance id), and gputui's
    `mig` name of it; None where `dev` lists no MIG device with that id."""
    m = dev.mig_device(gpu_instance_id)
    if m is None or m.gpu_instance_id is None:
        return None
    return {
        "GPU_I_PROFILE": visible(m.profile or ""),
        "GPU_I_ID": str(m.gpu_instance_id),
        "mig": mig_label(dev.index, m.index),
    }


def _mig_memory(
    dev: DeviceSnapshot, labels: dict[str, str], dcgm: Mapping[str, GaugeMetricFamily]
) -> None:
    for m in dev.mig_devices:
        extra = mig_labels(dev, m.gpu_instance_id)
        if extra is None:
            continue
        for name, attr in MIG_FIELDS.items():
            raw = getattr(m, attr)
            if raw is not None:
                dcgm[name].add_sample(name, {**labels, **extra}, raw / MIB)
        for name, attr in MIG_RATIOS.items():
            pct = getattr(m, attr)
            if pct is not None:
                dcgm[name].add_sample(name, {**labels, **extra}, pct / 100.0)


def _device_extras(
    s: DeviceSample,
    dev: DeviceSnapshot,
    values: tuple[str, ...],
    throttle: GaugeMetricFamily,
    pstate: GaugeMetricFamily,
    fan: GaugeMetricFamily,
    limit: GaugeMetricFamily,
    total: GaugeMetricFamily,
) -> None:
    if s.throttle_reasons is not None:
        active = set(s.throttle_reasons)
        for name in THROTTLE_NAMES:
            throttle.add_metric((*values, name), 1.0 if name in active else 0.0)
        for name in sorted(active - set(THROTTLE_NAMES)):  # other_0x... bits NVML added later
            throttle.add_metric((*values, visible(name)), 1.0)
    if s.performance_state is not None:
        pstate.add_metric(values, float(s.performance_state))
    if s.fan_pct is not None:
        fan.add_metric(values, float(s.fan_pct))
    watts = s.power_limit_w if s.power_limit_w is not None else dev.info.power_limit_w
    if watts is not None:
        limit.add_metric(values, float(watts))
    mem_total = s.memory_total if s.memory_total is not None else dev.info.memory_total
    if mem_total is not None:
        total.add_metric(values, float(mem_total))


def _process_families(
    processes: Iterable[GpuProcess],
    labels_of: Mapping[int, dict[str, str]],
    full_cmdline: bool,
    devices: Mapping[int, DeviceSnapshot],
) -> list[Metric]:
    label_names = (*PROCESS_LABELS, "cmdline") if full_cmdline else PROCESS_LABELS
    memory = GaugeMetricFamily(
        "gputui_process_gpu_memory_bytes",
        "GPU memory a process holds on this GPU (in bytes).",
        labels=label_names,
    )
    sm = GaugeMetricFamily(
        "gputui_process_sm_util_percent",
        "Share of the GPU's SMs this process kept busy over the last sample (in %).",
        labels=label_names,
    )
    for p in processes:
        dev = labels_of.get(p.gpu_index)
        if dev is None:
            continue
        values = [
            dev["gpu"],
            dev["UUID"],
            dev["Hostname"],
            str(p.pid),
            visible(p.user or ""),
            visible(p.container or ""),
            visible(p.name or ""),
        ]
        if full_cmdline:
            values.append(visible(" ".join(p.cmdline)) if p.cmdline else "")
        named = dict(zip(label_names, values, strict=True))
        dev_snap = devices.get(p.gpu_index)
        extra = mig_labels(dev_snap, p.gpu_instance_id) if dev_snap is not None else None
        named.update(extra or {})  # MIG: the device it runs in, as the memory series name it
        if p.gpu_memory is not None:
            memory.add_sample(memory.name, named, float(p.gpu_memory))
        if p.sm_util is not None:
            sm.add_sample(sm.name, named, float(p.sm_util))
    return [memory, sm]


def _fit_family(
    fit: Sequence[FitAnswer],
    labels_of: Mapping[int, dict[str, str]],
    devices: Mapping[int, DeviceSnapshot],
) -> Metric:
    family = GaugeMetricFamily(
        "gputui_fit_max_batch",
        "Largest batch of a configured model that fits in this GPU's free memory now "
        "(0: not even batch 1), in the precision gputui recommends. A GPU in MIG mode has "
        "one series per MIG instance (GPU_I_ID, GPU_I_PROFILE), never one for the card.",
        labels=("model", "gpu", "UUID", "Hostname", "precision"),
    )
    for a in fit:
        dev = labels_of.get(a.gpu_index)
        if dev is None:
            continue
        labels = {
            "model": visible(a.model),
            "gpu": dev["gpu"],
            "UUID": dev["UUID"],
            "Hostname": dev["Hostname"],
            "precision": a.precision,
        }
        if a.gpu_instance_id is not None:  # dcgm-exporter's MIG labels; absent on whole GPUs
            labels["GPU_I_ID"] = str(a.gpu_instance_id)
            labels["GPU_I_PROFILE"] = visible(a.profile or "")
            parent = devices.get(a.gpu_index)
            extra = mig_labels(parent, a.gpu_instance_id) if parent is not None else None
            labels.update(extra or {})
        family.add_sample("gputui_fit_max_batch", labels, float(a.max_batch))
    return family


def exporter_families(
    *,
    last_poll: float | None,
    poll_seconds: float | None,
    interval: float,
    errors: int,
    source: str,
    hostname: str | None,
) -> list[Metric]:
    """The exporter's own health: a last poll older than two intervals means a stuck poller.

    `source` says "nvml" or "simulated", so a reader can mark demo data as such.
    """
    host = (("Hostname", visible(hostname)),) if hostname else ()
    names = tuple(k for k, _ in host)
    values = tuple(v for _, v in host)
    out: list[Metric] = []
    if last_poll is not None:
        ts = GaugeMetricFamily(
            "gputui_exporter_last_poll_timestamp_seconds",
            "Unix time of the poll these values come from.",
            labels=("source", *names),
        )
        ts.add_metric((source, *values), last_poll)
        out.append(ts)
    every = GaugeMetricFamily(
        "gputui_exporter_poll_interval_seconds", "Seconds between polls.", labels=names
    )
    every.add_metric(values, interval)
    out.append(every)
    if poll_seconds is not None:
        dur = GaugeMetricFamily(
            "gputui_exporter_poll_duration_seconds", "How long the last poll took.", labels=names
        )
        dur.add_metric(values, poll_seconds)
        out.append(dur)
    err = Metric("gputui_exporter_poll_errors", "Polls that raised, since start.", "counter")
    err.add_sample("gputui_exporter_poll_errors_total", {}, float(errors))
    out.append(err)
    return out
