"""Each rule's condition: which keys (GPUs, XID codes, processes) it holds for in one snapshot.

A condition function reads one snapshot and returns {key: Condition} for the keys whose
condition is true now; the engine (engine.py) turns that into firing and clearing with
each rule's hold and clear times. A reading gputui does not have (None) never fires a
rule; a firing alert whose reading turns N/A clears only after the rule's clear time.
"""

from __future__ import annotations

from collections.abc import Callable

from gputui.alerts.rules import Rule
from gputui.alerts.xid import describe_xid
from gputui.model.alert import Severity
from gputui.model.record import record
from gputui.model.snapshot import DeviceSnapshot, GpuProcess, Snapshot

GiB = 1 << 30
# Throttle reasons (model/snapshot.py THROTTLE_REASONS names) that are a thermal or
# power limit: what the throttling rule is about (not idle, app clocks, sync boost).
LIMIT_REASONS = frozenset({"sw_power_cap", "hw_slowdown", "sw_thermal", "hw_thermal",
                           "hw_power_brake"})  # fmt: skip
XID_SEVERITY: dict[str | None, Severity] = {
    "restart_app": "warning",
    "reset_gpu": "critical",
    "reboot_node": "critical",
    "contact_support": "critical",
    "none": "info",
    None: "warning",  # an XID gputui does not know: not "info"
}


@record
class Condition:
    message: str
    gpu: str | None = None
    pid: int | None = None
    action: str | None = None
    severity: Severity | None = None  # None: the rule's


@record
class Watched:
    """A watched process while it runs: what `process_ended` reports when it is gone."""

    pid: int
    command: str | None
    peak_memory: int | None
    first_seen: float
    last_seen: float
    gpus: frozenset[int] = frozenset()


Found = dict[str, Condition]
ConditionFn = Callable[[Rule, Snapshot, tuple[Watched, ...]], Found]


def _gib(n: int) -> str:
    return f"{n / GiB:.1f} GiB"


def _read(snapshot: Snapshot) -> list[tuple[DeviceSnapshot, str]]:
    return [(d, str(d.index)) for d in snapshot.devices if d.sample is not None]


def memory_high(rule: Rule, snapshot: Snapshot, _: tuple[Watched, ...]) -> Found:
    out: Found = {}
    for dev, gpu in _read(snapshot):
        s = dev.sample
        assert s is not None
        if s.memory_used is None or not s.memory_total:
            continue
        pct = 100.0 * s.memory_used / s.memory_total
        if rule.limit is not None and pct >= rule.limit:
            out[gpu] = Condition(
                f"GPU {gpu}: memory {pct:.0f} % used ({_gib(s.memory_used)} of "
                f"{_gib(s.memory_total)}), at or above {rule.limit:g} %",
                gpu=gpu,
            )
    return out


def temperature_near_slowdown(rule: Rule, snapshot: Snapshot, _: tuple[Watched, ...]) -> Found:
    """Against the rule's `slowdown_c` when set, else each GPU's own threshold (NVML's);
    a GPU with neither is left out (the engine's notes() says so)."""
    out: Found = {}
    if rule.limit is None:
        return out
    for dev, gpu in _read(snapshot):
        slowdown = rule.slowdown_c if rule.slowdown_c is not None else dev.info.temp_slowdown_c
        t = dev.sample.temperature_c if dev.sample is not None else None
        if t is not None and slowdown is not None and t >= slowdown - rule.limit:
            out[gpu] = Condition(
                f"GPU {gpu}: {t} C, within {rule.limit:g} C of the slowdown "
                f"temperature ({slowdown:g} C)",
                gpu=gpu,
            )
    return out


def throttling(rule: Rule, snapshot: Snapshot, _: tuple[Watched, ...]) -> Found:
    out: Found = {}
    for dev, gpu in _read(snapshot):
        reasons = dev.sample.throttle_reasons if dev.sample is not None else None
        limits = sorted(LIMIT_REASONS.intersection(reasons or ()))
        if limits:
            out[gpu] = Condition(
                f"GPU {gpu}: clocks throttled by {', '.join(limits)} for over {rule.for_s:g} s",
                gpu=gpu,
            )
    return out


def ecc_uncorrected(rule: Rule, snapshot: Snapshot, _: tuple[Watched, ...]) -> Found:
    out: Found = {}
    dbe = {e.gpu_index for e in snapshot.events if e.kind == "ecc_dbe"}
    for dev in snapshot.devices:  # a GPU lost after the error still reports its event
        gpu = str(dev.index)
        count = dev.sample.ecc_volatile_uncorrected if dev.sample is not None else None
        if (count is not None and count > 0) or dev.index in dbe:
            if not count or count == 1:
                shown = "an uncorrected ECC error"
            else:
                shown = f"{count} uncorrected ECC errors"
            out[gpu] = Condition(
                f"GPU {gpu}: {shown} since the driver loaded",
                gpu=gpu,
                action="check the XID that came with it; a reset applies retired pages/rows",
            )
    return out


def xid(rule: Rule, snapshot: Snapshot, _: tuple[Watched, ...]) -> Found:
    out: Found = {}
    for event in snapshot.events:
        if event.kind != "xid":
            continue
        meaning, action, action_text = describe_xid(event.data)
        gpu = str(event.gpu_index)
        where = f"GPU {gpu}"
        if event.gpu_instance_id is not None:
            where += f" (GPU instance {event.gpu_instance_id})"
        out[f"{gpu}:{event.data}"] = Condition(
            f"{where}: XID {event.data}: {meaning}",
            gpu=gpu,
            action=action_text,
            severity=XID_SEVERITY.get(action, "warning"),
        )
    return out


def gpu_lost(rule: Rule, snapshot: Snapshot, _: tuple[Watched, ...]) -> Found:
    return {
        str(d.index): Condition(f"GPU {d.index}: {d.failed}", gpu=str(d.index))
        for d in snapshot.devices
        if d.failed is not None
    }


def memory_idle(rule: Rule, snapshot: Snapshot, _: tuple[Watched, ...]) -> Found:
    out: Found = {}
    floor = (rule.limit or 0.0) * GiB
    for dev, gpu in _read(snapshot):
        s = dev.sample
        assert s is not None
        if s.memory_used is not None and s.memory_used > floor and s.utilization_gpu == 0:
            out[gpu] = Condition(
                f"GPU {gpu}: {_gib(s.memory_used)} held at 0 % utilisation for over "
                f"{rule.for_s / 60:g} min",
                gpu=gpu,
            )
    return out


def process_ended(rule: Rule, snapshot: Snapshot, ended: tuple[Watched, ...]) -> Found:
    out: Found = {}
    for w in ended:
        peak = "unknown" if w.peak_memory is None else _gib(w.peak_memory)
        command = f" ({w.command})" if w.command else ""
        out[str(w.pid)] = Condition(
            f"process {w.pid}{command} ended (seen on the GPU for "
            f"{w.last_seen - w.first_seen:.0f} s); peak GPU memory {peak}; "
            "exit status unknown (not gputui's child)",
            pid=w.pid,
        )
    return out


CONDITIONS: dict[str, ConditionFn] = {
    "memory_high": memory_high,
    "temperature_near_slowdown": temperature_near_slowdown,
    "throttling": throttling,
    "ecc_uncorrected": ecc_uncorrected,
    "xid": xid,
    "gpu_lost": gpu_lost,
    "memory_idle": memory_idle,
    "process_ended": process_ended,
}


def _is_watched(rule: Rule, proc: GpuProcess) -> bool:
    if proc.pid in rule.pids:
        return True
    command = proc.command
    return command is not None and any(c in command for c in rule.commands)


def watched_processes(
    rule: Rule | None, snapshot: Snapshot, watched: dict[int, Watched]
) -> tuple[Watched, ...]:
    """Track the watched processes in `watched` (peak memory, summed over their GPUs);
    return those that were there and are gone from this snapshot."""
    if rule is None or rule.muted or not (rule.pids or rule.commands):
        watched.clear()
        return ()
    now = snapshot.timestamp
    memory: dict[int, int | None] = {}
    commands: dict[int, str | None] = {}
    gpus: dict[int, set[int]] = {}
    for proc in snapshot.processes:
        if not _is_watched(rule, proc):
            continue
        held = memory.get(proc.pid, 0)
        memory[proc.pid] = (
            None if held is None or proc.gpu_memory is None else held + proc.gpu_memory
        )
        commands[proc.pid] = proc.command
        gpus.setdefault(proc.pid, set()).add(proc.gpu_index)
    # A process on a GPU that cannot be read now is unknown, not ended: it stays watched.
    unread = {d.index for d in snapshot.devices if d.sample is None}
    ended = tuple(w for pid, w in watched.items() if pid not in memory and not (w.gpus & unread))
    for w in ended:
        del watched[w.pid]
    for pid, held in memory.items():
        old = watched.get(pid)
        peak = held if old is None else _max(old.peak_memory, held)
        first = now if old is None else old.first_seen
        watched[pid] = Watched(pid, commands[pid], peak, first, now, frozenset(gpus[pid]))
    return ended


def _max(a: int | None, b: int | None) -> int | None:
    if a is None:
        return b
    return a if b is None else max(a, b)
