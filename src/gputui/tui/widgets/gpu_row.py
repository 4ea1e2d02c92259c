"""One GPU on one line: what a panel draws when many GPUs share a short screen.

With 8 GPUs on an 80x24 terminal the two-line compact panels (16 lines) left
no room for a single process row. A row keeps what nvitop's one-line device
rows keep (index, short name, utilization, memory used/total, temperature,
power) and leaves clocks, PCIe and MIG lines to the device details (enter).
"""

from __future__ import annotations

from rich.style import Style

from gputui.model.snapshot import DeviceSnapshot

ROW_NAME_WIDTH = 17


def row_tail(dev: DeviceSnapshot) -> str:
    """Temperature and power, each with its own N/A; MIG and warnings as short marks."""
    s = dev.sample
    if s is None:
        return ""
    temp = "temp N/A" if s.temperature_c is None else f"{s.temperature_c}°C"
    limit = s.power_limit_w or dev.info.power_limit_w
    if s.power_w is None:
        power = "power N/A"
    elif limit is None:
        power = f"{s.power_w:.0f}W"
    else:
        power = f"{s.power_w:.0f}/{limit:.0f}W"
    parts = [temp, power]
    if dev.mig_devices:
        parts.append(f"MIG×{len(dev.mig_devices)}")
    return " " + " ".join(parts)


def row_warnings(dev: DeviceSnapshot) -> str:
    """Short marks, counted in the row's tail so a narrow row never cuts them off; the
    reasons are in the device details (enter)."""
    s = dev.sample
    if s is None:
        return ""
    marks = []
    if s.throttle_reasons:
        marks.append("throttled")
    if s.ecc_volatile_uncorrected:
        marks.append(f"ECC {s.ecc_volatile_uncorrected}")
    return (" " + " ".join(marks)) if marks else ""


def row_name(index: int, short: str) -> str:
    return f"{index} {short}"[: ROW_NAME_WIDTH - 1].ljust(ROW_NAME_WIDTH)


def split_middle(width: int, tail: int) -> tuple[int, int]:
    """The cells for the utilization and memory metrics between the name and the tail."""
    middle = max(0, width - ROW_NAME_WIDTH - tail)
    util = middle * 2 // 5
    return util, middle - util


def failed_row(name: str, dev: DeviceSnapshot, warn: Style) -> list[tuple[str, Style | None]]:
    return [(name, None), (f"FAILED: {dev.failed or 'no data'}", warn)]
