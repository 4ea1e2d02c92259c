"""The compact one-shot table of `gputui snapshot`, in the spirit of `nvitop -1` and gpustat.

Plain ASCII so it survives pipes, `LANG=C` and log files; colour only when the
caller says so (a tty without NO_COLOR). Missing values print as N/A, never 0.
Sources make outside strings visible where they enter (textsafe); the table does
it again for what it prints, so a source that forgot cannot write a control
character to the terminal (visible() of a clean string is the string).
"""

from __future__ import annotations

import time
from collections.abc import Iterable

from gputui.core.textsafe import is_visible, visible
from gputui.model.gpm import sms_mostly_idle
from gputui.model.mig import mig_ids, mig_label
from gputui.model.record import replace
from gputui.model.snapshot import DeviceSnapshot, GpuProcess, HostSnapshot, MigDevice, Snapshot

NA = "N/A"
_GIB = 1 << 30
_MIB = 1 << 20

_RESET = "\x1b[0m"
_BOLD = "\x1b[1m"
_DIM = "\x1b[2m"
_RED = "\x1b[31m"
_GREEN = "\x1b[32m"
_YELLOW = "\x1b[33m"
_CYAN = "\x1b[36m"
_MARKER = "\x1b[1;30;43m"  # black on yellow: the simulated-data marker must not be missed

_TYPE_SHORT = {"compute": "C", "graphics": "G", "mps": "MPS"}


class _Style:
    def __init__(self, color: bool) -> None:
        self.color = color

    def __call__(self, text: str, code: str) -> str:
        return f"{code}{text}{_RESET}" if self.color and code else text

    def na(self, text: str) -> str:
        return self(text, _DIM) if text.strip() == NA else text


def gib(value: int | None) -> str:
    return NA if value is None else f"{value / _GIB:.1f}"


def size(value: int | None) -> str:
    if value is None:
        return NA
    if value < _GIB:
        return f"{value / _MIB:.0f}MiB"
    return f"{value / _GIB:.1f}GiB"


def duration(seconds: float | None, *, bare_seconds: bool = False) -> str:
    """Running time: 0:59 (or 59s with `bare_seconds`), 12:05, 3:04:05, 2d03h.

    One rule for the text report and the TUI; the TUI's narrow columns want 59s."""
    if seconds is None:
        return NA
    s = int(max(0.0, seconds))
    days, s = divmod(s, 86400)
    hours, s = divmod(s, 3600)
    minutes, s = divmod(s, 60)
    if days:
        return f"{days}d{hours:02d}h"
    if hours:
        return f"{hours}:{minutes:02d}:{s:02d}"
    if bare_seconds and not minutes:
        return f"{s}s"
    return f"{minutes}:{s:02d}"


def _num(value: float | None, fmt: str = "{:.0f}", unit: str = "") -> str:
    return NA if value is None else fmt.format(value) + unit


def render(
    snapshot: Snapshot,
    *,
    color: bool = False,
    width: int | None = None,
    source_label: str | None = None,
    exited: frozenset[int] = frozenset(),
) -> str:
    """The whole table as one string. `width` truncates long command lines; None keeps them.

    `exited`: listed PIDs known to have exited (sources/host/exited.py), said so instead of
    "another PID namespace"; the caller checks, the table only prints."""
    st = _Style(color)
    lines = [_header(snapshot, st, source_label)]
    if snapshot.host is not None:
        lines.append(_host_line(snapshot.host, st))
    name_width = max((len(visible(d.info.name)) for d in snapshot.devices), default=0)
    by_gpu: dict[int, list[GpuProcess]] = {}
    for p in snapshot.processes:
        by_gpu.setdefault(p.gpu_index, []).append(_shown(p))
    if not snapshot.devices:
        lines.append("no GPUs found")
    for dev in snapshot.devices:
        lines.append(_device_line(dev, name_width, st))
        # Biggest GPU memory first, like the dashboard's table (NVML's order is arbitrary).
        procs = sorted(by_gpu.pop(dev.index, []), key=_by_gpu_memory)
        if dev.mig_devices:
            # MIG: each device with the processes of its GPU instance; the rest after them.
            for m in dev.mig_devices:
                lines.append(_mig_line(dev.index, m, st))
                mine = [p for p in procs if _in_mig(p, m)]
                lines.extend(_process_lines(mine, st, width, indent="      ", exited=exited))
            procs = [p for p in procs if dev.mig_device(p.gpu_instance_id) is None]
            if procs:
                lines.append(st("    not in a listed MIG device:", _DIM))
            lines.extend(_process_lines(procs, st, width, exited=exited))
            continue
        if dev.failed is None and not procs:
            if dev.processes_unsupported:
                lines.append(
                    st("    process list not available on this GPU (NVML: not supported)", _DIM)
                )
            else:
                lines.append(st("    no running processes", _DIM))
        lines.extend(_process_lines(procs, st, width, exited=exited))
    for gpu_index, procs in sorted(by_gpu.items()):  # processes on a device we did not list
        lines.append(f"[{gpu_index}] (device not listed)")
        lines.extend(_process_lines(sorted(procs, key=_by_gpu_memory), st, width, exited=exited))
    for notice in snapshot.notices:
        lines.append(st(f"note: {visible(notice)}", _YELLOW))
    return "\n".join(lines) + "\n"


def _shown(p: GpuProcess) -> GpuProcess:
    """`p` with its user, name, command line and container visible (the same `p` when clean)."""
    texts = (p.user or "", p.name or "", p.container or "", *(p.cmdline or ()))
    if all(is_visible(text) for text in texts):
        return p
    return replace(
        p,
        user=None if p.user is None else visible(p.user),
        name=None if p.name is None else visible(p.name),
        cmdline=None if p.cmdline is None else tuple(visible(arg) for arg in p.cmdline),
        container=None if p.container is None else visible(p.container),
    )


def _by_gpu_memory(p: GpuProcess) -> tuple[bool, int, int]:
    """GPU memory descending, unknown last, then PID: a stable, readable order."""
    return (p.gpu_memory is None, -(p.gpu_memory or 0), p.pid)


def _header(snap: Snapshot, st: _Style, source_label: str | None) -> str:
    host = visible(snap.host.hostname) if snap.host is not None else None
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(snap.timestamp))
    parts = [
        st(host, _BOLD) if host else None,
        when,
        f"driver {visible(snap.driver_version or NA)}",
        f"CUDA {visible(snap.cuda_driver_version or NA)}",
    ]
    if snap.simulated:
        label = "SIMULATED" + (f" ({visible(source_label)})" if source_label else "")
        parts.append(st(f" {label} ", _MARKER) if st.color else f"*** {label} ***")
    else:
        parts.append(f"source {snap.source}")
    return "  ".join(p for p in parts if p)


def _host_line(h: HostSnapshot, st: _Style) -> str:
    cpu = st.na(_num(h.cpu_percent, "{:.0f}", "%"))
    cores = f" of {len(h.per_cpu_percent)} cores" if h.per_cpu_percent else ""
    load = " ".join(f"{x:.2f}" for x in h.load_average) if h.load_average else NA
    ram = f"{gib(h.memory_used)}/{gib(h.memory_total)} GiB"
    swap = f"{gib(h.swap_used)}/{gib(h.swap_total)} GiB"
    return f"CPU {cpu}{cores}  load {load}  RAM {ram}  swap {swap}"


def _pct_color(pct: float | None) -> str:
    if pct is None:
        return ""
    return _RED if pct >= 90 else _YELLOW if pct >= 50 else _GREEN


def _temp_color(temp: int | None) -> str:
    if temp is None:
        return ""
    return _RED if temp >= 85 else _YELLOW if temp >= 75 else ""


def _device_line(dev: DeviceSnapshot, name_width: int, st: _Style) -> str:
    head = f"[{dev.index}] {visible(dev.info.name):<{name_width}}"
    s = dev.sample
    if s is None:
        reason = visible(dev.failed or "no data")
        return f"{head}  {st('FAILED: ' + reason, _RED)}"
    temp = st(st.na(_num(s.temperature_c, "{:.0f}", "C").rjust(4)), _temp_color(s.temperature_c))
    fan = st.na(_num(s.fan_pct, "{:.0f}", "%").rjust(4))
    util = st(st.na(_num(s.utilization_gpu, "{:.0f}", "%").rjust(4)), _pct_color(s.utilization_gpu))
    total = s.memory_total if s.memory_total is not None else dev.info.memory_total
    mem_pct = 100.0 * s.memory_used / total if s.memory_used is not None and total else None
    if s.memory_used is None and total is None:
        mem = st.na(NA.ljust(14))  # no memory data at all: one N/A, not "N/A/N/A GiB"
    else:
        mem = st(f"{gib(s.memory_used):>5}/{gib(total)} GiB", _pct_color(mem_pct))
    limit = s.power_limit_w if s.power_limit_w is not None else dev.info.power_limit_w
    power = f"{_num(s.power_w).rjust(4)}/{_num(limit)} W"
    if s.power_w is None:
        power = st(power, _DIM)
    parts = [head, temp, f"fan {fan}", f"util {util}"]
    if s.sm_active_pct is not None:  # GPM: only on GPUs that have it, never an N/A
        sms = f"SMs {s.sm_active_pct:.0f}%"
        if sms_mostly_idle(s.utilization_gpu, s.sm_active_pct):
            sms = st(sms + " (busy, SMs mostly idle)", _YELLOW)
        parts.append(sms)
    parts += [f"mem {mem}", power]
    if s.performance_state is not None:
        parts.append(f"P{s.performance_state}")
    if s.throttle_reasons:
        parts.append(st(visible("throttle: " + ",".join(s.throttle_reasons)), _YELLOW))
    if dev.failed:
        parts.append(st(visible(dev.failed), _RED))
    return "  ".join(parts)


def _in_mig(p: GpuProcess, m: MigDevice) -> bool:
    return m.gpu_instance_id is not None and p.gpu_instance_id == m.gpu_instance_id


def _mig_line(gpu_index: int, m: MigDevice, st: _Style) -> str:
    """`  MIG 0:0 3g.40gb  GI 1/CI 0  mem 20.0/39.2 GiB  BAR1 4MiB/1.2GiB  util N/A  MIG-...`
    (the device named in model/mig.py's notation, the ids nvidia-smi shows beside it)"""
    mem = NA if m.memory_total is None else f"{gib(m.memory_used)}/{gib(m.memory_total)} GiB"
    bar1 = NA if m.bar1_total is None else f"{size(m.bar1_used)}/{size(m.bar1_total)}"
    util = st.na(_num(m.utilization_gpu, "{:.0f}", "%"))
    if m.sm_active_pct is not None:  # GPM per GPU instance, where NVML has no utilization
        util += f"  SMs {m.sm_active_pct:.0f}%"
    return (
        f"  MIG {mig_label(gpu_index, m.index)} {visible(m.profile or NA):<8} "
        f"{mig_ids(m.gpu_instance_id, m.compute_instance_id)}  mem {mem}  BAR1 {bar1}"
        f"  util {util}  {visible(m.uuid or NA)}"
    )


def _process_lines(
    procs: Iterable[GpuProcess],
    st: _Style,
    width: int | None,
    indent: str = "    ",
    exited: frozenset[int] = frozenset(),
) -> list[str]:
    out = []
    for p in procs:
        kind = "+".join(_TYPE_SHORT.get(part, part) for part in p.type.split("+"))
        user = p.user or ("?" if not p.host_visible else NA)
        cpu = _num(p.cpu_percent, "{:.0f}", "%")
        head = (
            f"{indent}{p.pid:>7}  {user:<10.10} {kind:<3} {size(p.gpu_memory):>8}"
            f"  cpu {cpu:>5}  {duration(p.running_s):>8}  "
        )
        if not p.host_visible and p.pid in exited:
            command = "(exited: NVML still lists it)"
        elif not p.host_visible:
            command = "(not visible from here: another PID namespace or no permission)"
        else:
            command = p.command or NA
        tail = ""
        if p.container:
            tail = f"  [container {p.container}"
            tail += f" pid {p.container_pid}]" if p.container_pid is not None else "]"
        if width is not None:
            room = width - len(head) - len(tail)
            if len(command) > room:
                command = command[: room - 3] + "..." if room > 3 else ""
        out.append(
            head
            + (st(command, _DIM) if not p.host_visible else command)
            + (st(tail, _CYAN) if tail else "")
        )
    return out
