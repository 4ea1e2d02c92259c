"""`gputui snapshot --prometheus URL`: the fleet as a host table and a GPU table, or JSON.

Plain ASCII like `gputui snapshot` (render/snapshot_text.py), missing values N/A.
It renders a ClusterSnapshot it is given; reading one is commands/snapshot.py's.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable
from typing import Any

from gputui.model.cluster import ClusterGpu, ClusterHost, ClusterSnapshot, MigReading
from gputui.model.cluster_summary import IDLE_HELD_MIB, UserTotal
from gputui.model.mig import mig_label

NA = "N/A"
SCHEMA_VERSION = 1
_GIB = 1 << 30
GPU_TABLE_MAX = 64  # more GPUs than this: a per-card summary instead, unless --all
# The GPU fields the text shows (gpu_cells, host_row): `snapshot --prometheus` queries
# only these; the memory total is used + free + reserved where no gputui exporter says it.
TEXT_METRICS = (
    "DCGM_FI_DEV_GPU_UTIL",
    "DCGM_FI_DEV_FB_USED",
    "DCGM_FI_DEV_FB_FREE",
    "DCGM_FI_DEV_FB_RESERVED",
    "DCGM_FI_DEV_GPU_TEMP",
    "DCGM_FI_DEV_POWER_USAGE",
    "gputui_gpu_memory_total_bytes",
)


def _gib(value: float | None) -> str:
    return NA if value is None else f"{value / _GIB:.1f}"


def _num(value: float | None, fmt: str = "{:.0f}", unit: str = "") -> str:
    return NA if value is None else fmt.format(value) + unit


def age_text(age: float | None) -> str:
    if age is None:
        return NA
    if age < 120:
        return f"{age:.0f}s"
    if age < 7200:
        return f"{age / 60:.0f}m"
    return f"{age / 3600:.0f}h"


def summarise(values: Iterable[float]) -> tuple[float | None, float | None]:
    """(mean, max) of the values, (None, None) when there are none."""
    vals = [v for v in values if not math.isnan(v)]
    if not vals:
        return None, None
    return sum(vals) / len(vals), max(vals)


def host_row(h: ClusterHost) -> dict[str, Any]:
    """The host table's figures, shared by the text table, JSON and the TUI."""
    samples = [g.sample for g in h.gpus if g.sample is not None]
    mean_util, max_util = summarise(
        float(s.utilization_gpu) for s in samples if s.utilization_gpu is not None
    )
    used = [s.memory_used for s in samples if s.memory_used is not None]
    totals = [g.memory_total for g in h.gpus if g.memory_total is not None]
    temps = [
        (s.temperature_c, g.index)
        for g in h.gpus
        if (s := g.sample) is not None and s.temperature_c is not None
    ]
    power = [s.power_w for s in samples if s.power_w is not None]
    hottest = max(temps) if temps else None
    return {
        "host": h.name,
        "state": h.state,
        "gpus": len(h.gpus),
        "gpus_lost": sum(1 for g in h.gpus if not g.up),
        "util_mean": mean_util,
        "util_max": max_util,
        "memory_used": sum(used) if used else None,
        "memory_total": sum(totals) if totals else None,
        "hottest_c": hottest[0] if hottest else None,
        "hottest_gpu": hottest[1] if hottest else None,
        "power_w": sum(power) if power else None,
        "age_s": h.age_s,
        "exporters": list(h.exporters),
        "simulated": h.simulated,
        "processes": len(h.processes),
        "gpus_idle_held": sum(
            1
            for s in samples
            if s.utilization_gpu == 0
            and s.memory_used is not None
            and s.memory_used >= IDLE_HELD_MIB << 20
        ),
    }


def render_cluster(cluster: ClusterSnapshot, *, every: bool = False) -> str:
    """The host table, then the GPU table, or for a fleet of more than GPU_TABLE_MAX GPUs
    (unless `every`) one line per card model: thousands of GPU rows are not read."""
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(cluster.timestamp))
    gpus = cluster.gpus
    lines = [f"{cluster.url}  {when}  {len(cluster.hosts)} hosts  {len(gpus)} GPUs"]
    if not cluster.hosts:
        lines.append("no GPU series found (is dcgm-exporter or `gputui exporter` scraped?)")
        return "\n".join(lines) + "\n"
    header = [
        "HOST",
        "STATE",
        "GPUS",
        "UTIL MEAN",
        "UTIL MAX",
        "MEM GiB",
        "HOTTEST",
        "POWER W",
        "AGE",
    ]
    rows = []
    for h in cluster.hosts:
        r = host_row(h)
        hottest = (
            f"{r['hottest_c']}C (GPU {r['hottest_gpu']})" if r["hottest_c"] is not None else NA
        )
        state = r["state"] + (" SIMULATED" if r["simulated"] else "")
        lost = f" ({r['gpus_lost']} lost)" if r["gpus_lost"] else ""
        rows.append(
            [
                h.name,
                state,
                f"{r['gpus']}{lost}",
                _num(r["util_mean"], unit="%"),
                _num(r["util_max"], unit="%"),
                f"{_gib(r['memory_used'])}/{_gib(r['memory_total'])}",
                hottest,
                _num(r["power_w"]),
                age_text(r["age_s"]),
            ]
        )
    lines += _table(header, rows, right={2, 3, 4, 5, 7, 8})
    lines.append(users_line(fleet_users(cluster)))
    lines.append(idle_held_line((h.name, host_row(h)["gpus_idle_held"]) for h in cluster.hosts))
    lines.append("")
    if every or len(gpus) <= GPU_TABLE_MAX:
        gheader = ["HOST", "GPU", "NAME", "UTIL", "MEM GiB", "FREE GiB", "TEMP", "POWER W"]
        grows = []
        for h in cluster.hosts:
            for g in h.gpus:
                grows.append([h.name, str(g.index), *gpu_cells(g)])
                grows += [[h.name, *mig_cells(r)] for r in g.mig]
        lines += _table(gheader, grows, right={1, 3, 4, 5, 6, 7})
    else:
        lines += card_lines(cluster)
        lines.append(f"{len(gpus):,} GPUs: `--all` lists every one")
    for notice in cluster.notices:
        lines.append(f"note: {notice}")
    return "\n".join(lines) + "\n"


def card_lines(cluster: ClusterSnapshot) -> list[str]:
    """One row per GPU model: how many, on how many hosts, lost, mean utilisation, memory."""
    cards: dict[str, list[tuple[str, ClusterGpu]]] = {}
    for h in cluster.hosts:
        for g in h.gpus:
            cards.setdefault(g.name, []).append((h.name, g))
    header = ["CARD", "GPUS", "HOSTS", "LOST", "UTIL MEAN", "MEM GiB"]
    rows = []
    for name, members in sorted(cards.items(), key=lambda c: (-len(c[1]), c[0])):
        samples = [g.sample for _, g in members if g.sample is not None]
        mean, _ = summarise(
            float(s.utilization_gpu) for s in samples if s.utilization_gpu is not None
        )
        used = [s.memory_used for s in samples if s.memory_used is not None]
        totals = [t for _, g in members if (t := g.memory_total) is not None]
        rows.append(
            [
                name,
                f"{len(members):,}",
                f"{len({h for h, _ in members}):,}",
                f"{sum(1 for _, g in members if not g.up):,}",
                _num(mean, unit="%"),
                f"{_gib(sum(used) if used else None)}/{_gib(sum(totals) if totals else None)}",
            ]
        )
    return _table(header, rows, right={1, 2, 3, 4, 5})


def gpu_cells(g: ClusterGpu) -> list[str]:
    s = g.sample
    if s is None:
        return [g.name, "LOST", NA, NA, NA, NA]
    return [
        g.name,
        _num(s.utilization_gpu, unit="%"),
        f"{_gib(s.memory_used)}/{_gib(g.memory_total)}",
        _gib(s.memory_free),
        _num(s.temperature_c, unit="C"),
        _num(s.power_w),
    ]


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def users_line(users: Iterable[UserTotal], limit: int = 6) -> str:
    """ "Users: alice 60.0 GiB (3 GPUs, 2 hosts)  bob 8.0 GiB (1 GPU, 1 host)": GPU memory per
    user across the fleet, most first; what a team lead asks first."""
    users = list(users)
    if not users:
        return "Users: none seen (processes come from `gputui exporter` hosts)"
    parts = [
        f"{u.user} {u.memory / _GIB:.1f} GiB ({_plural(u.gpus, 'GPU')}, {_plural(u.hosts, 'host')})"
        for u in users[:limit]
    ]
    more = f"  +{len(users) - limit} more" if len(users) > limit else ""
    return "Users: " + "  ".join(parts) + more


def idle_held_line(held: Iterable[tuple[str, int]], limit: int = 6) -> str:
    """The hosts with GPUs holding memory at 0 % utilisation ((host, GPUs) pairs), most first."""
    shown = sorted(((n, c) for n, c in held if c), key=lambda h: (-h[1], h[0]))
    head = f"Memory held at 0% util (>= {IDLE_HELD_MIB // 1024} GiB): "
    if not shown:
        return head + "none"
    parts = [f"{name} ({_plural(count, 'GPU')})" for name, count in shown[:limit]]
    more = f"  +{len(shown) - limit} more" if len(shown) > limit else ""
    return head + "  ".join(parts) + more


def fleet_users(cluster: ClusterSnapshot) -> tuple[UserTotal, ...]:
    """Each user's GPU memory, processes, GPUs and hosts in the fleet, most memory first (as
    the cluster view's aggregated figures: sources/prometheus/summary.py user_totals)."""
    memory: dict[str, float] = {}
    procs: dict[str, int] = {}
    gpus: dict[str, set[tuple[str, int]]] = {}
    for h in cluster.hosts:
        for p in h.processes:
            user = p.user or NA
            memory[user] = memory.get(user, 0.0) + (p.gpu_memory or 0)
            procs[user] = procs.get(user, 0) + 1
            gpus.setdefault(user, set()).add((h.name, p.gpu_index))
    out = [
        UserTotal(u, memory[u], procs[u], len(gpus[u]), len({h for h, _ in gpus[u]}))
        for u in memory
    ]
    out.sort(key=lambda u: (-u.memory, u.user))
    return tuple(out)


def mig_name(r: MigReading) -> str:
    """A MIG device of the fleet as the dashboard names it ("0:2"; "0:GI3" from dcgm-exporter,
    which gives the GPU instance id only)."""
    return mig_label(r.gpu, r.mig_index, r.gpu_instance_id)


def mig_cells(r: MigReading) -> list[str]:
    """A MIG device's row under its GPU: its name, profile and GI id, memory; the readings
    NVML gives per GPU only (utilisation, temperature, power) are its GPU's row."""
    return [
        mig_name(r),
        f"  MIG {r.profile or NA} GI {r.gpu_instance_id}",
        "",
        f"{_gib(r.memory_used)}/{_gib(r.memory_total)}",
        _gib(r.memory_free),
        "",
        "",
    ]


def mig_dict(r: MigReading) -> dict[str, Any]:
    return {
        "gpu": r.gpu,
        "mig": mig_name(r),
        "mig_index": r.mig_index,
        "gpu_instance_id": r.gpu_instance_id,
        "profile": r.profile,
        "memory_total": r.memory_total,
        "memory_used": r.memory_used,
        "memory_free": r.memory_free,
    }


def _table(header: list[str], rows: list[list[str]], right: set[int]) -> list[str]:
    widths = [len(h) for h in header]
    for row in rows:
        widths = [max(w, len(c)) for w, c in zip(widths, row, strict=True)]

    def line(cells: list[str]) -> str:
        return "  ".join(
            c.rjust(w) if i in right else c.ljust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        ).rstrip()

    return [line(header), *map(line, rows)]


def cluster_to_dict(cluster: ClusterSnapshot) -> dict[str, Any]:
    from gputui.model.snapshot_encode import snapshot_to_dict

    hosts = []
    for h in cluster.hosts:
        snap = snapshot_to_dict(h.snapshot(cluster.timestamp))
        hosts.append(
            {
                **host_row(h),
                "last_seen": h.last_seen,
                "instances": list(h.instances),
                "devices": snap["devices"],
                "mig_devices": [mig_dict(r) for g in h.gpus for r in g.mig],
                "process_list": snap["processes"],
            }
        )
    return {
        "schema_version": SCHEMA_VERSION,
        "source": "prometheus",
        "prometheus": cluster.url,
        "timestamp": cluster.timestamp,
        "users": [
            {
                "user": u.user,
                "memory": u.memory,
                "processes": u.processes,
                "gpus": u.gpus,
                "hosts": u.hosts,
            }
            for u in fleet_users(cluster)
        ],  # fmt: skip
        "hosts": hosts,
    }


def cluster_json_text(cluster: ClusterSnapshot) -> str:
    """`snapshot --prometheus --json`: indented up to GPU_TABLE_MAX GPUs; a larger fleet
    one host to a line. The same JSON either way; json indents in pure Python, several
    times the cost of the compact C encoder, and 8,000 GPUs indented are 450,000 lines."""
    import json

    data = cluster_to_dict(cluster)
    if sum(len(h.gpus) for h in cluster.hosts) <= GPU_TABLE_MAX:
        return json.dumps(data, indent=2)
    hosts = data.pop("hosts")
    head = json.dumps(data)[:-1]  # the fields, without the closing brace
    body = ",\n".join(json.dumps(h) for h in hosts)
    return f'{head}, "hosts": [\n{body}\n]}}' if hosts else f'{head}, "hosts": []}}'
