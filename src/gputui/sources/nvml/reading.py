"""What one NVML device says, as gputui's records: its static facts (`read_info`, once),
its sample (`read_sample` every poll; `read_table_sample` for the snapshot's text
table), and the facts read every 30 s (`read_slow`).

Each read goes through a `DeviceQuery` (query.py: unsupported fields None and
never asked again); the calls are calls.py's. Units become gputui's here
(milliwatts to watts, millijoules to joules), strings are made visible once.
"""

from __future__ import annotations

import pynvml

from gputui.core.textsafe import visible
from gputui.model.snapshot import COMPUTE_MODES, THROTTLE_REASONS, DeviceInfo, DeviceSample
from gputui.sources.nvml.calls import (
    ARCH,
    BAR1,
    CC,
    CLOCK,
    CLOCK_MEM,
    CLOCK_SM,
    COMPUTE_MODE,
    DECODER,
    DISPLAY_ACTIVE,
    ECC,
    ECC_MODE,
    ENCODER,
    ENERGY,
    ENFORCED_LIMIT,
    FAN,
    MAX_CLOCK,
    MEMORY,
    MIG,
    NAME,
    PCI,
    PCIE_MAX_GEN,
    PCIE_MAX_WIDTH,
    PERSISTENCE,
    POWER,
    POWER_CONSTRAINTS,
    POWER_DEFAULT_LIMIT,
    POWER_MANAGEMENT_LIMIT,
    PSTATE,
    TEMP_SLOWDOWN,
    TEMPERATURE,
    THROTTLE,
    UTILIZATION,
    UUID,
)
from gputui.sources.nvml.query import DeviceQuery

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (see sources/base.py)
if TYPE_CHECKING:
    from typing import Any, Literal

    Detail = Literal["full", "table"]

_PSTATE_UNKNOWN = getattr(pynvml, "NVML_PSTATE_UNKNOWN", 32)
_ARCH_UNKNOWN = getattr(pynvml, "NVML_DEVICE_ARCH_UNKNOWN", 0xFFFFFFFF)
_KNOWN_REASON_BITS = 0x7FF


def decode_throttle_reasons(mask: int) -> tuple[str, ...]:
    """Short names of the set bits; idle alone means the GPU is resting, not throttled: ()."""
    if mask == 0 or mask == 0x001:
        return ()
    names = [name for bit, name in THROTTLE_REASONS if mask & bit]
    extra = mask & ~_KNOWN_REASON_BITS
    if extra:
        names.append(f"other_{extra:#x}")
    return tuple(names)


def cuda_version_text(value: int) -> str:
    """NVML's 12040 as "12.4"."""
    return f"{value // 1000}.{value % 1000 // 10}"


def text(value: Any) -> str:
    """An NVML string (name, UUID, bus id, versions), made safe for a terminal here, once."""
    text = value.decode(errors="replace") if isinstance(value, bytes) else str(value)
    return visible(text)


def arch_names() -> dict[int, str]:
    prefix = "NVML_DEVICE_ARCH_"
    return {
        int(getattr(pynvml, n)): n[len(prefix) :].lower()
        for n in dir(pynvml)
        if n.startswith(prefix) and n != prefix + "UNKNOWN"
    }


def _mw_to_w(value: Any) -> float | None:
    return None if value is None else value / 1000.0


def read_info(
    index: int, q: DeviceQuery, archs: dict[int, str], partial: list[Any], detail: Detail = "full"
) -> DeviceInfo:
    """Static facts. `partial` collects what was read, for a device that fails half-way.

    With `detail="table"` only what the snapshot table prints (name, memory total,
    power limit, MIG mode); the rest stays None. Memory and BAR1 are handed on to
    the first poll (`DeviceQuery.hand_on`), which would otherwise ask again at once.
    """
    full = detail == "full"
    name = q.get("name", NAME)
    partial.append(("name", text(name) if name is not None else "Unknown GPU"))
    if full:
        uuid = q.get("uuid", UUID)
        partial.append(("uuid", None if uuid is None else text(uuid)))
        pci = q.get("pci_bus_id", PCI)
        partial.append(("pci_bus_id", None if pci is None else text(pci.busId)))
    mem = q.get("memory", MEMORY)
    q.hand_on("memory", mem)
    partial.append(("memory_total", None if mem is None else int(mem.total)))
    if full:
        cc = q.get("compute_capability", CC)
        partial.append(("compute_capability", None if cc is None else f"{cc[0]}.{cc[1]}"))
        arch = q.get("architecture", ARCH)
        partial.append(
            (
                "architecture",
                None if arch is None or arch == _ARCH_UNKNOWN else archs.get(int(arch)),
            )
        )
    partial.append(
        ("power_limit_w", _mw_to_w(q.get("power_management_limit", POWER_MANAGEMENT_LIMIT)))
    )
    if full:
        partial.append(("max_sm_clock_mhz", q.get("max_sm_clock_mhz", MAX_CLOCK, CLOCK_SM)))
        partial.append(("max_mem_clock_mhz", q.get("max_mem_clock_mhz", MAX_CLOCK, CLOCK_MEM)))
    mig = q.get("mig_mode", MIG)
    partial.append(
        ("mig_mode", None if mig is None else bool(mig[0] == pynvml.NVML_DEVICE_MIG_ENABLE))
    )
    if not full:
        return DeviceInfo(index=index, **dict(partial))
    ecc = q.get("ecc_mode", ECC_MODE)
    partial.append(
        ("ecc_mode", None if ecc is None else bool(ecc[0] == pynvml.NVML_FEATURE_ENABLED))
    )
    partial.append(
        ("power_default_limit_w", _mw_to_w(q.get("power_default_limit_w", POWER_DEFAULT_LIMIT)))
    )
    limits = q.get("power_constraints", POWER_CONSTRAINTS)
    partial.append(("power_min_limit_w", None if limits is None else _mw_to_w(limits[0])))
    partial.append(("power_max_limit_w", None if limits is None else _mw_to_w(limits[1])))
    slowdown = q.get("temp_slowdown_c", TEMP_SLOWDOWN)
    partial.append(("temp_slowdown_c", None if slowdown is None else int(slowdown)))
    partial.append(("pcie_max_gen", q.get("pcie_max_gen", PCIE_MAX_GEN)))
    partial.append(("pcie_max_width", q.get("pcie_max_width", PCIE_MAX_WIDTH)))
    bar1 = q.get("bar1", BAR1)
    q.hand_on("bar1", bar1)
    partial.append(("bar1_total", None if bar1 is None else int(_field(bar1, "bar1Total"))))
    return DeviceInfo(index=index, **dict(partial))


def _enabled(value: Any) -> bool | None:
    """An nvmlEnableState_t as a bool; None stays N/A."""
    return None if value is None else bool(value == pynvml.NVML_FEATURE_ENABLED)


def _compute_mode_name(value: Any) -> str | None:
    if value is None:
        return None
    mode = int(value)
    return COMPUTE_MODES[mode] if 0 <= mode < len(COMPUTE_MODES) else f"mode {mode}"


# Reads a ctypes field without pynvml's Python-level __getattribute__ (3x faster; see procs.py).
_field = object.__getattribute__


def read_slow(q: DeviceQuery) -> tuple[bool | None, bool | None, str | None]:
    """Persistence mode, display active, compute mode: read every SLOW_INTERVAL_S."""
    return (
        _enabled(q.get("persistence_mode", PERSISTENCE)),
        _enabled(q.get("display_active", DISPLAY_ACTIVE)),
        _compute_mode_name(q.get("compute_mode", COMPUTE_MODE)),
    )


NO_LINK: tuple[None, None] = (None, None)


def read_sample(
    q: DeviceQuery,
    pcie: tuple[int | None, int | None],
    link: tuple[int | None, int | None] = NO_LINK,
    slow: tuple[bool | None, bool | None, str | None] = (None, None, None),
) -> DeviceSample:
    get = q.get
    enc = get("encoder_util", ENCODER)
    dec = get("decoder_util", DECODER)
    bar1 = get("bar1", BAR1)
    energy = get("energy_j", ENERGY)
    return DeviceSample(
        **_table_fields(q),
        sm_clock_mhz=get("sm_clock_mhz", CLOCK, CLOCK_SM),
        mem_clock_mhz=get("mem_clock_mhz", CLOCK, CLOCK_MEM),
        pcie_rx_kbs=pcie[0],
        pcie_tx_kbs=pcie[1],
        encoder_util=None if enc is None else int(enc[0]),
        decoder_util=None if dec is None else int(dec[0]),
        ecc_volatile_uncorrected=get("ecc_volatile_uncorrected", ECC),
        persistence_mode=slow[0],
        display_active=slow[1],
        compute_mode=slow[2],
        pcie_gen=link[0],
        pcie_width=link[1],
        bar1_used=None if bar1 is None else int(_field(bar1, "bar1Used")),
        energy_j=None if energy is None else energy / 1000.0,
    )


def _table_fields(q: DeviceQuery) -> dict[str, Any]:
    """The sample fields the snapshot's text table prints: every poll reads these."""
    get = q.get
    mem = get("memory", MEMORY)
    util = get("utilization", UTILIZATION)
    pstate = get("performance_state", PSTATE)
    reasons = get("throttle_reasons", THROTTLE)
    return {
        "utilization_gpu": None if util is None else _field(util, "gpu"),
        "utilization_memory": None if util is None else _field(util, "memory"),
        "memory_used": None if mem is None else _field(mem, "used"),
        "memory_free": None if mem is None else _field(mem, "free"),
        "memory_total": None if mem is None else _field(mem, "total"),
        "memory_reserved": None if mem is None else _reserved(mem, q),
        "temperature_c": get("temperature_c", TEMPERATURE),
        "fan_pct": get("fan_pct", FAN),
        "power_w": _mw_to_w(get("power_w", POWER)),
        "power_limit_w": _mw_to_w(get("power_limit_w", ENFORCED_LIMIT)),
        "performance_state": None if pstate is None or pstate == _PSTATE_UNKNOWN else int(pstate),
        "throttle_reasons": None if reasons is None else decode_throttle_reasons(int(reasons)),
    }


def read_table_sample(q: DeviceQuery) -> DeviceSample:
    """What the snapshot's text table prints of a poll (`detail="table"`), nothing more."""
    return DeviceSample(**_table_fields(q))


def _reserved(mem: Any, q: DeviceQuery) -> int | None:
    """Only the v2 struct reports reserved memory apart; v1 counts it as used."""
    reserved = getattr(mem, "reserved", None)
    if reserved is None:
        q.unsupported.add("memory_reserved")
        return None
    return int(reserved)
