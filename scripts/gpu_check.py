#!/usr/bin/env python3
"""Compare one `gputui snapshot --json` with nvidia-smi's CSV taken at the same moment.

    gpu_check.py SNAPSHOT.json QUERY_GPU.csv QUERY_APPS.csv

QUERY_GPU.csv: nvidia-smi --query-gpu=name,uuid,pci.bus_id,memory.total,memory.used,
utilization.gpu,temperature.gpu,power.draw,clocks.sm,clocks.mem --format=csv,noheader,nounits
QUERY_APPS.csv: nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits

Static fields must match exactly; moving ones (memory used, utilization,
temperature, power, clocks) within a tolerance, because the two tools read
the driver a few milliseconds apart. Prints every comparison and exits 1 if
any is off. Standard library only (runs in the fresh venv of gpu-check.sh).
"""

from __future__ import annotations

import csv
import json
import sys
from collections import Counter
from collections.abc import Callable
from typing import Any

MiB = 1024 * 1024
GPU_COLUMNS = (
    "name",
    "uuid",
    "pci.bus_id",
    "memory.total",
    "memory.used",
    "utilization.gpu",
    "temperature.gpu",
    "power.draw",
    "clocks.sm",
    "clocks.mem",
)


def _na(text: str) -> str | None:
    text = text.strip()
    return None if not text or text.startswith("[") or text in ("N/A", "Not Supported") else text


def _num(text: str | None) -> float | None:
    return None if text is None else float(text)


def parse_csv(text: str, columns: int) -> list[list[str | None]]:
    rows = []
    for row in csv.reader(line for line in text.splitlines() if line.strip()):
        if len(row) != columns:
            raise ValueError(f"expected {columns} columns, got {len(row)}: {row}")
        rows.append([_na(c) for c in row])
    return rows


def _abs(tol: float) -> Callable[[float], float]:
    return lambda want: tol


def _rel(floor: float, frac: float) -> Callable[[float], float]:
    return lambda want: max(floor, abs(want) * frac)


class Report:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.bad = 0
        self.compared = 0

    def check(
        self, where: str, ours: Any, smi: Any, tol: Callable[[float], float] | None = None
    ) -> None:
        self.compared += 1
        if ours is None or smi is None:
            ok = ours is None and smi is None
            how = "both N/A" if ok else "one side N/A"
        elif tol is None:
            ok = str(ours).strip().lower() == str(smi).strip().lower()
            how = "exact"
        else:
            limit = tol(float(smi))
            ok = abs(float(ours) - float(smi)) <= limit
            how = f"tolerance {limit:g}"
        self.bad += not ok
        mark = "ok  " if ok else "DIFF"
        self.lines.append(f"{mark} {where}: gputui {ours!r}, nvidia-smi {smi!r} ({how})")


def compare(snapshot: dict[str, Any], gpu_csv: str, apps_csv: str) -> Report:
    rep = Report()
    rows = parse_csv(gpu_csv, len(GPU_COLUMNS))
    devices = snapshot.get("devices", [])
    by_uuid = {(d.get("info") or {}).get("uuid"): d for d in devices}
    rep.check("GPU count", len(devices), len(rows))
    for i, row in enumerate(rows):
        smi = dict(zip(GPU_COLUMNS, row, strict=True))
        dev = by_uuid.get(smi["uuid"]) or (devices[i] if i < len(devices) else None)
        label = f"GPU {i}"
        if dev is None:
            rep.check(f"{label} present", None, smi["uuid"])
            continue
        info = dev.get("info") or {}
        sample = dev.get("sample") or {}
        rep.check(f"{label} failed", dev.get("failed"), None)
        rep.check(f"{label} name", info.get("name"), smi["name"])
        rep.check(f"{label} uuid", info.get("uuid"), smi["uuid"])
        rep.check(f"{label} pci.bus_id", info.get("pci_bus_id"), smi["pci.bus_id"])
        total = info.get("memory_total")
        rep.check(
            f"{label} memory.total MiB",
            None if total is None else total // MiB,
            _num(smi["memory.total"]),
            _abs(1),
        )
        used = sample.get("memory_used")
        rep.check(
            f"{label} memory.used MiB",
            None if used is None else used / MiB,
            _num(smi["memory.used"]),
            _abs(256),
        )
        moving = (
            ("utilization.gpu %", "utilization_gpu", _abs(25)),
            ("temperature.gpu C", "temperature_c", _abs(3)),
            ("power.draw W", "power_w", _rel(30, 0.2)),
            ("clocks.sm MHz", "sm_clock_mhz", _rel(150, 0.15)),
            ("clocks.mem MHz", "mem_clock_mhz", _rel(150, 0.15)),
        )
        for column, field, tol in moving:
            smi_key = column.split()[0]
            rep.check(f"{label} {column}", sample.get(field), _num(smi[smi_key]), tol)

    apps = parse_csv(apps_csv, 2)
    ours = [p for p in snapshot.get("processes", []) if "compute" in (p.get("type") or "")]
    rep.check(
        "compute PIDs",
        sorted(Counter(int(p["pid"]) for p in ours).items()),
        sorted(Counter(int(a[0] or 0) for a in apps).items()),
    )
    mem_by_pid: dict[int, list[float | None]] = {}
    for p in ours:
        mem = p.get("gpu_memory")
        mem_by_pid.setdefault(int(p["pid"]), []).append(None if mem is None else mem / MiB)
    for pid_text, used_text in apps:
        pid = int(pid_text or 0)
        candidates = mem_by_pid.get(pid) or [None]
        smi_mem = _num(used_text)
        best = min(
            candidates,
            key=lambda m: abs(m - smi_mem) if m is not None and smi_mem is not None else 1e18,
        )
        rep.check(f"PID {pid} used_memory MiB", best, smi_mem, _abs(64))
    return rep


def main(argv: list[str]) -> int:
    if len(argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    with open(argv[1]) as f:
        snapshot = json.load(f)
    with open(argv[2]) as f:
        gpu_csv = f.read()
    with open(argv[3]) as f:
        apps_csv = f.read()
    rep = compare(snapshot, gpu_csv, apps_csv)
    print("\n".join(rep.lines))
    print(f"gpu-check: {rep.compared} comparisons, {rep.bad} differences")
    return 1 if rep.bad else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
