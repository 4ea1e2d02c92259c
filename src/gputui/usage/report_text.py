"""The report's tables as text: one block for the run, one table per GPU, one per process."""

from __future__ import annotations

from collections.abc import Sequence

from gputui.core.textsafe import visible
from gputui.model.alert import AlertChange
from gputui.usage.gpu import GpuSummary
from gputui.usage.process import ProcessSummary
from gputui.usage.summary import GAP_INTERVALS, RunSummary
from gputui.usage.timefmt import duration, when

NA = "N/A"
GIB = 1 << 30


def _gib(value: int | None) -> str:
    return NA if value is None else f"{value / GIB:.1f}"


def _num(value: float | None, digits: int = 1) -> str:
    return NA if value is None else f"{value:.{digits}f}"


def _at_least(wh: float | None, uncounted_s: float) -> str:
    """Energy in Wh, marked as a floor when some of the time could not be counted."""
    if wh is None:
        return NA
    return f"{'≥' if uncounted_s > 0 else ''}{wh:.2f}"


def _table(header: tuple[str, ...], rows: Sequence[tuple[str, ...]]) -> list[str]:
    widths = [max(len(r[i]) for r in (header, *rows)) for i in range(len(header))]
    lines = [
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) for row in (header, *rows)
    ]
    return [line.rstrip() for line in lines]


def run_lines(run: RunSummary) -> list[str]:
    if run.start is None or run.end is None:
        return ["No snapshots in this range."]
    how = "measured" if run.interval_measured else "recorded"
    return [
        f"Run: {when(run.start)} to {when(run.end)} ({duration(run.end - run.start)}, "
        f"{run.snapshots} snapshots, every {run.interval_s:g} s, {how})",
        f"Energy integrates power over intervals up to {run.gap_bound_s:g} s ({GAP_INTERVALS} "
        "polling intervals); longer gaps and intervals with an unknown power are not counted.",
    ]


def _throttle(g: GpuSummary) -> str:
    if g.throttled_s is None:
        return "unknown"
    reasons = ", ".join(f"{r} {duration(s)}" for r, s in g.throttle_by_reason.items())
    return duration(g.throttled_s) + (f" ({reasons})" if reasons else "")


def gpu_lines(gpus: list[GpuSummary]) -> list[str]:
    rows = []
    notes = []
    for g in gpus:
        util = NA if g.util_p50 is None else f"{g.util_p50}/{g.util_p95}/{g.util_max}"
        rows.append(
            (
                str(g.index),
                visible(g.name),
                util,
                f"{_gib(g.memory_peak)}/{_gib(g.memory_total)}",
                _at_least(g.energy_wh, g.gap_s + g.energy_unknown_s),
                _throttle(g),
            )
        )
        if g.gap_s or g.energy_unknown_s:
            notes.append(
                f"GPU {g.index}: energy covers {duration(g.energy_covered_s)}; not counted: "
                f"{duration(g.gap_s)} in gaps, {duration(g.energy_unknown_s)} with power unknown"
            )
        if g.failed_samples:
            notes.append(f"GPU {g.index}: lost or unreadable in {g.failed_samples} snapshots")
    header = ("GPU", "Name", "Util % p50/p95/max", "Mem peak GiB", "Energy Wh", "Throttled")
    return [*_table(header, rows), *notes]


def process_lines(processes: list[ProcessSummary], run_end: float | None) -> list[str]:
    if not processes:
        return ["No processes."]
    rows = []
    for p in processes:
        share = _at_least(p.energy_wh, p.unapportioned_s)
        if p.energy_wh is not None:
            share += f" ({p.energy_basis})"
        rows.append(
            (
                str(p.pid),
                visible(p.user or NA),
                when(p.start) if p.start is not None else f"≤{when(p.first_seen)}",
                when(p.last_seen) if p.ended else "running",
                ",".join(str(i) for i in p.gpus),
                _gib(p.memory_peak),
                _num(p.sm_mean),
                share,
                visible(p.command or NA)[:60],
            )
        )
    header = (
        "PID", "User", "Started", "Ended", "GPUs", "Peak GiB", "SM % mean", "Energy Wh (by)",
        "Command",
    )  # fmt: skip
    return _table(header, rows)


MAX_ALERTS_SHOWN = 50


def alert_lines(alerts: Sequence[AlertChange]) -> list[str]:
    """The alert changes of the range, oldest first (the JSON has them all)."""
    if not alerts:
        return ["Alerts: none in this range."]
    fired = sum(a.state == "firing" for a in alerts)
    rows = [
        (
            when(a.timestamp),
            a.state,
            a.severity,
            "host" if a.gpu is None else f"GPU {a.gpu}",
            visible(a.rule),
            visible(a.message)[:80],
        )
        for a in alerts[:MAX_ALERTS_SHOWN]
    ]
    more = len(alerts) - MAX_ALERTS_SHOWN
    tail = [f"... and {more} more (--json lists them all)"] if more > 0 else []
    header = ("Time", "State", "Severity", "Where", "Rule", "Message")
    return [f"Alerts: {fired} fired, {len(alerts) - fired} cleared", *_table(header, rows), *tail]


def render_text(run: RunSummary, alerts: Sequence[AlertChange] | None = None) -> str:
    lines = [*run_lines(run)]
    if run.gpus:
        lines += ["", *gpu_lines(run.gpus)]
        lines += ["", "Processes", *process_lines(run.processes, run.end)]
        lines.append(
            "Energy by: sm = split by SM %, memory = by GPU memory (SM % unknown for one of "
            "the GPU's processes); N/A: neither was known; ≥: some of the time not counted."
        )
    if alerts is not None:
        lines += ["", *alert_lines(alerts)]
    return "\n".join(lines) + "\n"
