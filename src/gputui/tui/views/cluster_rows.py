"""The cluster view's table rows: cells, sort keys and filters, free of Textual.

One place decides what each column shows and how it sorts, so the host
table, the GPU table and the tests agree. Missing values read N/A and sort
last whatever the direction.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from operator import itemgetter
from typing import Any

from gputui.model.cluster import ClusterGpu, ClusterHost, MigReading
from gputui.model.cluster_summary import HostSummary
from gputui.render.cluster_text import age_text, mig_name
from gputui.tui.views.table_columns import Column as TableColumn

NA = "N/A"
_BLOCKS = "▁▂▃▄▅▆▇█"
SPARK_WIDTH = 12
GiB = 1 << 30

History = dict[tuple[str, int], list[float]]
Column = TableColumn[Any]  # a row here is a host's facts (a dict) or a GpuRow


def sparkline(values: Sequence[float], width: int = SPARK_WIDTH, top: float = 100.0) -> str:
    """The last `width` values as block characters scaled to 0..top; blank when none."""
    tail = list(values)[-width:]
    if not tail:
        return ""
    cells = []
    for v in tail:
        frac = 0.0 if top <= 0 else min(1.0, max(0.0, v / top))
        cells.append(_BLOCKS[min(len(_BLOCKS) - 1, int(frac * (len(_BLOCKS) - 1) + 0.5))])
    return "".join(cells).rjust(width)


def history_by_host(history: History) -> dict[str, list[list[float]]]:
    """The history's series grouped by host (done once per history, not once per row)."""
    out: dict[str, list[list[float]]] = {}
    for (host, _), series in sorted(history.items()):
        if series:
            out.setdefault(host, []).append(series)
    return out


def host_history(by_host: dict[str, list[list[float]]], name: str) -> list[float]:
    """Mean utilisation of the host's GPUs per point (GPUs aligned on their newest point)."""
    series = by_host.get(name, [])
    if not series:
        return []
    n = min(len(s) for s in series)
    return [sum(s[len(s) - n + i] for s in series) / len(series) for i in range(n)]


def _figure(
    key: str, label: str, value: Callable[[Any], Any], show: Callable[[Any], str]
) -> Column:
    """A right-aligned figure: `show` of the row's value, N/A where it is missing; sorts by it."""

    def cell(row: Any) -> str:
        v = value(row)
        return NA if v is None else show(v)

    return Column(key, label, cell, value, True)


_PCT = "{:.0f}%".format
_WATTS = "{:.0f}".format


def _gib_pair(used: float | None, total: float | None) -> str:
    if used is None and total is None:
        return NA
    u = NA if used is None else f"{used / GiB:.1f}"
    t = NA if total is None else f"{total / GiB:.1f}"
    return f"{u}/{t}"


UNKNOWN = "unknown"  # a host's state while Prometheus does not answer: nobody can say


def _host_facts(
    h: HostSummary,
    by_host: dict[str, list[list[float]]],
    since_s: float = 0.0,
    reachable: bool = True,
) -> dict[str, Any]:
    row = h.row()
    if not reachable:
        # Its state is what Prometheus last said; with no answer, "up" would be a guess.
        row["state"] = UNKNOWN
    row["history"] = host_history(by_host, h.name)
    if row["age_s"] is not None:
        # The age at draw time: while Prometheus is down no new snapshot comes to age it.
        row["age_s"] += since_s
    return row


NAME_MAX = 18  # cells of the GPU table's Name column: at 80 columns Free, Temp, Power stay


def gpu_name(g: ClusterGpu) -> str:
    """One name per model whichever exporter named it: the catalog's card, else NVML's name
    without the "NVIDIA " that some drivers and exporters put first and others do not."""
    name = g.card or g.name
    if name.startswith("NVIDIA "):
        name = name[len("NVIDIA ") :]
    return name


def _short(text: str, width: int = NAME_MAX) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


HOST_COLUMNS: tuple[Column, ...] = (
    Column("host", "Host", lambda r: r["host"], lambda r: r["host"]),
    Column(
        "state",
        "State",
        lambda r: r["state"] + (" (sim)" if r["simulated"] else ""),
        lambda r: r["state"],
    ),
    Column(
        "gpus",
        "GPUs",
        lambda r: f"{r['gpus']}" + (f" ({r['gpus_lost']} lost)" if r["gpus_lost"] else ""),
        lambda r: r["gpus"],
        True,
    ),
    _figure("util_mean", "Util", itemgetter("util_mean"), _PCT),
    _figure("util_max", "Max", itemgetter("util_max"), _PCT),
    Column(
        "memory",
        "Mem GiB",
        lambda r: _gib_pair(r["memory_used"], r["memory_total"]),
        lambda r: r["memory_used"],
        True,
    ),
    Column(
        "hottest",
        "Hottest",
        lambda r: NA if r["hottest_c"] is None else f"{r['hottest_c']}C GPU {r['hottest_gpu']}",
        lambda r: r["hottest_c"],
        True,
    ),
    _figure("power", "Power W", itemgetter("power_w"), _WATTS),
    Column("age", "Age", lambda r: age_text(r["age_s"]), lambda r: r["age_s"], True),
    # Last, and first to give way: on a narrow terminal the figures stay, the sparkline goes.
    Column(
        "history",
        "History",
        lambda r: sparkline(r["history"]),
        lambda r: (r["history"] or [None])[-1],
    ),
)
# The terminal width a host column needs (the rest always show): at 80 columns Hottest,
# Power and Age stay on screen, and the highest utilisation and the sparkline give way.
HOST_MIN_WIDTH = {"history": 100, "util_max": 90}


@dataclass(frozen=True)
class GpuRow:
    """A GPU's row, or (`mig` set) one of its MIG devices' rows, listed under it."""

    host: ClusterHost
    gpu: ClusterGpu
    history: list[float]
    mig: MigReading | None = None
    stale_view: bool = False  # Prometheus does not answer: its state is unknown

    @property
    def key(self) -> str:
        tail = "" if self.mig is None else f"\x00{self.mig.gpu_instance_id}"
        return f"{self.host.name}\x00{self.gpu.index}{tail}"

    @property
    def place(self) -> tuple[int, int]:
        """(GPU index, -1 for the GPU, else the GPU instance id): its MIG devices follow it."""
        return (self.gpu.index, -1 if self.mig is None else self.mig.gpu_instance_id)

    def label(self) -> str:
        return str(self.gpu.index) if self.mig is None else mig_name(self.mig)

    def name(self) -> str:
        if self.mig is None:
            return _short(gpu_name(self.gpu))
        return _short(f"MIG {self.mig.profile or NA} GI {self.mig.gpu_instance_id}")


_MIG_MEMORY = {"memory_used", "memory_free"}


def _sample(r: GpuRow, attr: str) -> Any:
    """The GPU's reading of `attr`; a MIG device's own memory, and nothing else of it (NVML
    reads utilisation, temperature and power per GPU: they are its GPU's row)."""
    if r.mig is not None:
        return getattr(r.mig, attr) if attr in _MIG_MEMORY else None
    s = r.gpu.sample
    return None if s is None else getattr(s, attr)


def _total(r: GpuRow) -> int | None:
    return r.gpu.memory_total if r.mig is None else r.mig.memory_total


def _sampled(attr: str) -> Callable[[GpuRow], Any]:
    """The GPU's last sample of `attr`, None while it has none."""
    return lambda r: _sample(r, attr)


def _gpu_state(r: GpuRow) -> str:
    if r.stale_view:
        return UNKNOWN
    if not r.gpu.up:
        return "lost"
    return r.host.state


# GPM's SMs column gives way first on a narrow terminal (a fleet without GPM leaves it blank).
GPU_MIN_WIDTH = {"sms": 100}

GPU_COLUMNS: tuple[Column, ...] = (
    Column("host", "Host", lambda r: r.host.name, lambda r: (r.host.name, r.place)),
    Column("gpu", "GPU", GpuRow.label, lambda r: r.place, True),
    Column("name", "Name", GpuRow.name, GpuRow.name),
    Column("state", "State", _gpu_state, _gpu_state),
    _figure("util", "Util", _sampled("utilization_gpu"), _PCT),
    # GPM's SMs active (DCGM_FI_PROF_SM_ACTIVE): blank, not N/A, where a GPU has no GPM
    Column(
        "sms",
        "SMs",
        lambda r: "" if _sample(r, "sm_active_pct") is None else _PCT(_sample(r, "sm_active_pct")),
        _sampled("sm_active_pct"),
        True,
    ),
    Column(
        "memory",
        "Mem GiB",
        lambda r: _gib_pair(_sample(r, "memory_used"), _total(r)),
        lambda r: _sample(r, "memory_used"),
        True,
    ),
    _figure("free", "Free", _sampled("memory_free"), lambda v: f"{v / GiB:.1f}"),
    _figure("temp", "Temp", _sampled("temperature_c"), "{}C".format),
    _figure("power", "Power W", _sampled("power_w"), _WATTS),
    # Last: on a narrow terminal the sparkline is what goes off-screen, not the numbers.
    Column(
        "history", "History", lambda r: sparkline(r.history), lambda r: (r.history or [None])[-1]
    ),
)


def host_rows(
    hosts: Sequence[HostSummary],
    by_host: dict[str, list[list[float]]],
    since_s: float = 0.0,
    *,
    reachable: bool = True,
) -> list[dict[str, Any]]:
    """`by_host`: history_by_host's; `since_s`: seconds since the snapshot arrived, added to
    each host's age; `reachable`: False while Prometheus does not answer (every state then
    reads "unknown")."""
    return [_host_facts(h, by_host, since_s, reachable) for h in hosts]


def gpu_rows(
    hosts: Sequence[ClusterHost], history: History, *, reachable: bool = True
) -> list[GpuRow]:
    """Each GPU's row, followed by one row per MIG device it has."""
    out = []
    stale = not reachable
    for h in hosts:
        for g in h.gpus:
            out.append(GpuRow(h, g, history.get((h.name, g.index), []), stale_view=stale))
            out += [GpuRow(h, g, [], r, stale) for r in g.mig]
    return out


def sorted_rows(rows: list[Any], column: Column, reverse: bool) -> list[Any]:
    """Sorted by `column`; rows whose value is missing go last in both directions."""
    present = [r for r in rows if column.sort(r) is not None]
    missing = [r for r in rows if column.sort(r) is None]
    return sorted(present, key=column.sort, reverse=reverse) + missing


def host_matches(row: dict[str, Any], needle: str) -> bool:
    return not needle or needle.casefold() in f"{row['host']} {row['state']}".casefold()


def gpu_matches(row: GpuRow, needle: str) -> bool:
    if not needle:
        return True
    text = (
        f"{row.host.name} {row.label()} {row.gpu.name} {row.gpu.card or ''} {_gpu_state(row)}"
        f" {row.name()}"
    )
    return needle.casefold() in text.casefold()
