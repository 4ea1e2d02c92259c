"""`gputui check`'s judgement of one snapshot: are these GPUs fit to take a job?

One line either way, for a cron job's mail or a Slurm prolog's log. A value the check
needs and cannot read fails the check (a prolog that cannot confirm must not pass).
"""

from __future__ import annotations

from dataclasses import dataclass

from gputui.model.snapshot import DeviceSnapshot, Snapshot

GIB = 1 << 30


@dataclass(frozen=True)
class Verdict:
    ok: bool
    line: str


def _size(n: int) -> str:
    return f"{n / GIB:.1f} GiB"


def _problems(d: DeviceSnapshot, min_free: int | None, max_temp: float | None) -> list[str]:
    s = d.sample
    if s is None:
        return [f"GPU {d.index}: {d.failed or 'cannot be read'}"]
    found = []
    if min_free is not None:
        if s.memory_free is None:
            found.append(f"GPU {d.index}: free memory unknown (--min-free {_size(min_free)})")
        elif s.memory_free < min_free:
            found.append(
                f"GPU {d.index}: {_size(s.memory_free)} free, below --min-free {_size(min_free)}"
            )
    if max_temp is not None:
        if s.temperature_c is None:
            found.append(f"GPU {d.index}: temperature unknown (--max-temp {max_temp:g} °C)")
        elif s.temperature_c > max_temp:
            found.append(f"GPU {d.index}: {s.temperature_c} °C, above --max-temp {max_temp:g} °C")
    return found


def judge(
    snap: Snapshot, *, min_free: int | None, max_temp: float | None, gpu: int | None
) -> Verdict:
    devices = [d for d in snap.devices if gpu is None or d.index == gpu]
    if not devices:
        return Verdict(False, "no GPU" if gpu is None else f"no GPU {gpu}")
    problems = [p for d in devices for p in _problems(d, min_free, max_temp)]
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        return Verdict(False, problems[0] + more)
    what = [f"{len(devices)} GPU{'s' if len(devices) > 1 else ''} readable"]
    samples = [d.sample for d in devices if d.sample is not None]
    if min_free is not None:
        least = min(s.memory_free or 0 for s in samples)
        what.append(f"least free {_size(least)} (>= {_size(min_free)})")
    if max_temp is not None:
        hottest = max(s.temperature_c or 0 for s in samples)
        what.append(f"hottest {hottest} °C (<= {max_temp:g} °C)")
    return Verdict(True, "ok: " + ", ".join(what))
