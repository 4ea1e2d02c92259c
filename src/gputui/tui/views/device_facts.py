"""A GPU's facts as (label, value) rows, and its MIG devices as lines: what the views print.

Plain functions without Textual, so the rules are tested directly: every field
that NVML did not give reads `N/A` on its own, with its label (never `0`,
never `off` for "unknown", never `N/A/N/A W`).
"""

from __future__ import annotations

from collections.abc import Sequence

from gputui.model.gpm import sms_mostly_idle
from gputui.model.mig import mig_ids, mig_label
from gputui.model.snapshot import DeviceSample, DeviceSnapshot, GpuProcess, MigDevice
from gputui.tui.views import formatting as fmt

NA = fmt.NA
_KWH = 3.6e6  # joules
# Largest unit first; a driver loaded for months reads GJ, and there the kWh are what people read.
_ENERGY_UNITS = (
    (1e9, "{:.2f} GJ ({kwh:,.0f} kWh)"),
    (1e6, "{:.2f} MJ ({kwh:.2f} kWh)"),
    (1e3, "{:.1f} kJ"),
)


def on_off(value: bool | None, on: str = "on", off: str = "off") -> str:
    return NA if value is None else (on if value else off)


def watts(value: float | None) -> str:
    return NA if value is None else f"{value:.0f} W"


def energy(joules: float | None) -> str:
    """1234567 J as "1.23 MJ (0.34 kWh)": joules for the unit, kWh for the electricity bill."""
    if joules is None:
        return NA
    for unit, form in _ENERGY_UNITS:
        if joules >= unit:
            return form.format(joules / unit, kwh=joules / _KWH)
    return f"{joules:.0f} J"


def pcie_link(gen: int | None, width: int | None) -> str:
    """ "Gen 4 x16"; a part NVML did not give is N/A on its own: "Gen N/A x16"."""
    if gen is None and width is None:
        return NA
    return f"Gen {fmt.na(gen)} x{fmt.na(width)}"


def used_of(used: int | None, total: int | None) -> str:
    if used is None and total is None:
        return NA
    if used is None:
        return f"N/A of {fmt.size(total)}"
    if total is None:
        return f"{fmt.size(used)} used"
    return f"{fmt.size(used)} / {fmt.size(total)}"


def power_range(lo: float | None, hi: float | None) -> str:
    if lo is None and hi is None:
        return NA
    return f"{watts(lo)} to {watts(hi)}"


def compute_mode(mode: str | None) -> str:
    return NA if mode is None else mode.replace("_", " ")


STATIC_ROWS = 12  # the first rows of device_facts(): what was read once, at start


def device_facts(dev: DeviceSnapshot) -> list[tuple[str, str]]:
    """Every fact of one GPU: STATIC_ROWS static ones, then this poll's, in display order."""
    info, s = dev.info, dev.sample
    rows = [
        ("GPU", f"{info.index}  {info.name}"),
        ("UUID", info.uuid or NA),
        ("PCI bus id", info.pci_bus_id or NA),
        ("architecture", info.architecture or NA),
        ("compute capability", info.compute_capability or NA),
        ("memory total", fmt.size(info.memory_total)),
        ("MIG mode", on_off(info.mig_mode, "enabled", "disabled")),
        ("ECC mode", on_off(info.ecc_mode, "enabled", "disabled")),
        ("PCIe link max", pcie_link(info.pcie_max_gen, info.pcie_max_width)),
        ("power limit default", watts(info.power_default_limit_w)),
        ("power limit range", power_range(info.power_min_limit_w, info.power_max_limit_w)),
        (
            "max clocks SM / mem",
            f"{fmt.na(info.max_sm_clock_mhz, '{} MHz')} / "
            f"{fmt.na(info.max_mem_clock_mhz, '{} MHz')}",
        ),
    ]
    if dev.failed is not None or s is None:
        rows.append(("state", f"FAILED: {dev.failed or 'no data'}"))
        return rows
    rows += [
        ("persistence mode", on_off(s.persistence_mode)),
        ("display active", on_off(s.display_active, "yes", "no")),
        ("compute mode", compute_mode(s.compute_mode)),
        ("PCIe link now", pcie_link(s.pcie_gen, s.pcie_width)),
        (
            "PCIe rx / tx",
            f"{fmt.throughput_kbs(s.pcie_rx_kbs)} / {fmt.throughput_kbs(s.pcie_tx_kbs)}",
        ),
        ("utilization GPU", fmt.na(s.utilization_gpu, "{}%")),
        ("utilization memory", fmt.na(s.utilization_memory, "{}%")),
        ("encoder", fmt.na(s.encoder_util, "{}%")),
        ("decoder", fmt.na(s.decoder_util, "{}%")),
        ("memory used", used_of(s.memory_used, s.memory_total or info.memory_total)),
        ("memory reserved", fmt.size(s.memory_reserved)),
        ("BAR1", used_of(s.bar1_used, info.bar1_total)),
        ("temperature", fmt.na(s.temperature_c, "{}°C")),
        ("fan", fmt.na(s.fan_pct, "{}%")),
        ("power draw", watts(s.power_w)),
        ("power limit now", watts(s.power_limit_w or info.power_limit_w)),
        ("energy since driver load", energy(s.energy_j)),
        (
            "clocks SM / mem",
            f"{fmt.na(s.sm_clock_mhz, '{} MHz')} / {fmt.na(s.mem_clock_mhz, '{} MHz')}",
        ),
        ("P-state", fmt.pstate(s.performance_state)),
        (
            "throttle",
            NA if s.throttle_reasons is None else (", ".join(s.throttle_reasons) or "none"),
        ),
        ("ECC errors (uncorrected)", fmt.na(s.ecc_volatile_uncorrected)),
    ]
    if s.sm_active_pct is not None or s.dram_active_pct is not None:  # GPM: only where it is
        rows += [
            ("SMs active (GPM)", _pct(s.sm_active_pct)),
            ("SM occupancy (GPM)", _pct(s.sm_occupancy_pct)),
            ("tensor active (GPM)", _pct(s.tensor_active_pct)),
            ("DRAM active (GPM)", _pct(s.dram_active_pct)),
        ]
        if sms_mostly_idle(s.utilization_gpu, s.sm_active_pct):
            rows.append(
                ("busy vs SMs", f"busy {s.utilization_gpu}%, SMs {_pct(s.sm_active_pct)}: "
                 "few SMs worked")
            )
    return rows


def _pct(value: float | None) -> str:
    return NA if value is None else f"{value:.0f}%"


def gpm_text(s: DeviceSample | MigDevice, compact: bool) -> str:
    """GPM's figures in a line ("" on a GPU without GPM: no N/A, nothing drawn)."""
    if s.sm_active_pct is None and s.dram_active_pct is None:
        return ""
    if compact:
        return f"SMs {_pct(s.sm_active_pct)}"
    return (
        f"SMs active {_pct(s.sm_active_pct)}  occupancy {_pct(s.sm_occupancy_pct)}  "
        f"tensor {_pct(s.tensor_active_pct)}  DRAM {_pct(s.dram_active_pct)}"
    )


def mig_line(gpu_index: int, m: MigDevice, processes: Sequence[GpuProcess] | None = None) -> str:
    """One MIG device in one line: "MIG 0:0 3g.40gb  GI 1/CI 0  mem 20.0/39.2 GiB  util N/A  2 procs"
    (its name in model/mig.py's notation, the ids nvidia-smi shows beside it).

    Without `processes` (the GPU panel, which is handed the device alone) the count is left out.
    """
    ids = mig_ids(m.gpu_instance_id, m.compute_instance_id)
    mem = (
        NA if m.memory_total is None else f"{fmt.gib(m.memory_used)}/{fmt.gib(m.memory_total)} GiB"
    )
    name = "MIG " + mig_label(gpu_index, m.index)
    line = f"{name} {m.profile or NA}  {ids}  mem {mem}  util {fmt.na(m.utilization_gpu, '{}%')}"
    if m.sm_active_pct is not None:  # GPM per GPU instance: what NVML's utilization lacks
        line += f"  SMs {_pct(m.sm_active_pct)}"
    if processes is None:
        return line
    n = sum(
        1
        for p in processes
        if m.gpu_instance_id is not None and p.gpu_instance_id == m.gpu_instance_id
    )
    return f"{line}  {n} proc" + ("" if n == 1 else "s")


def subtitle(dev: DeviceSnapshot) -> str:
    """The panel's bottom border: bus id and link, persistence, encoder/decoder."""
    info, s = dev.info, dev.sample
    parts = [info.pci_bus_id or "bus N/A"]
    if s is not None and dev.failed is None:
        parts.append("PCIe " + pcie_link(s.pcie_gen, s.pcie_width))
        parts.append(f"ENC {fmt.na(s.encoder_util, '{}%')} DEC {fmt.na(s.decoder_util, '{}%')}")
        parts.append(f"persistence {on_off(s.persistence_mode)}")
    if info.mig_mode:
        parts.append("MIG")
    return " · ".join(parts)


def instance_label(p: GpuProcess, devices: Sequence[DeviceSnapshot]) -> str | None:
    """The MIG device a process runs in, "0:2 1g.10gb, GI 3/CI 0"; None on a whole GPU."""
    if p.gpu_instance_id is None:
        return None
    dev = next((d for d in devices if d.index == p.gpu_index), None)
    mig = dev.mig_device(p.gpu_instance_id) if dev is not None else None
    profile = (mig.profile if mig is not None else None) or "profile N/A"
    index = mig.index if mig is not None else p.mig_index
    name = mig_label(p.gpu_index, index, p.gpu_instance_id)
    return f"{name} {profile}, {mig_ids(p.gpu_instance_id, p.compute_instance_id)}"
