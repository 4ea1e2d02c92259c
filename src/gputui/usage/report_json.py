"""The report as one JSON document (`gputui report --json`), versioned on its own."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from gputui.model.alert import AlertChange
from gputui.usage.summary import RunSummary

SCHEMA_VERSION = 1


def report_document(
    run: RunSummary, *, pid: int | None = None, alerts: Sequence[AlertChange] | None = None
) -> dict[str, Any]:
    """Plain JSON types; unknown values are null, never 0. Series are left out (they are
    the plots' downsampled means; `--csv`/`--parquet` export every sample). `alerts`: the
    recording's alert changes in the range (null: the recording keeps none)."""
    processes = []
    for p in run.processes:
        entry = asdict(p)
        entry["gpus"] = list(p.gpus)
        entry["memory_peak_by_gpu"] = {str(k): v for k, v in p.memory_peak_by_gpu.items()}
        processes.append(entry)
    return {
        "schema_version": SCHEMA_VERSION,
        "run": {
            "start": run.start,
            "end": run.end,
            "snapshots": run.snapshots,
            "interval_s": run.interval_s,
            "interval_measured": run.interval_measured,
            "gap_bound_s": run.gap_bound_s,
            "pid": pid,
        },
        "gpus": [asdict(g) for g in run.gpus],
        "processes": processes,
        "alerts": None if alerts is None else [a.to_json() for a in alerts],
    }
