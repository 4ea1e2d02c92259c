"""Every GPU sample of a report's range as rows, for notebooks: CSV, or Parquet (pyarrow).

One row per GPU per snapshot; an unknown value is an empty CSV cell or a Parquet null,
never 0. The bytes carry a mark (the CSV's exact header, the Parquet file's `gputui`
metadata key) so that a later export may replace a file gputui wrote, and only that.
"""

from __future__ import annotations

import csv
import io
from typing import Any

from gputui.model.snapshot import Snapshot

COLUMNS = (
    "timestamp", "gpu", "name", "utilization_gpu", "memory_used", "memory_total", "power_w",
    "temperature_c", "sm_clock_mhz", "throttle_reasons", "failed",
)  # fmt: skip
CSV_HEADER = ",".join(COLUMNS) + "\r\n"
PARQUET_MARK = b"gputui.report"
PARQUET_HINT = "--parquet: needs pyarrow: pip install 'gputui[parquet]'"

Row = tuple[Any, ...]


class SampleRows:
    """Collects the rows while the report reads its snapshots (`add` is summarise's hook)."""

    def __init__(self, gpus: frozenset[int] | None = None) -> None:
        self.rows: list[Row] = []
        self.gpus = gpus

    def add(self, snap: Snapshot) -> None:
        for d in snap.devices:
            if self.gpus is not None and d.index not in self.gpus:
                continue
            s = d.sample
            if s is None:
                self.rows.append(
                    (snap.timestamp, d.index, d.info.name, *([None] * 7), d.failed or "failed")
                )
                continue
            reasons = None if s.throttle_reasons is None else ";".join(s.throttle_reasons)
            total = s.memory_total if s.memory_total is not None else d.info.memory_total
            self.rows.append(
                (
                    snap.timestamp, d.index, d.info.name, s.utilization_gpu, s.memory_used,
                    total, s.power_w, s.temperature_c, s.sm_clock_mhz, reasons, None,
                )
            )  # fmt: skip


def csv_bytes(rows: list[Row]) -> bytes:
    buffer = io.StringIO(newline="")
    writer = csv.writer(buffer)
    writer.writerow(COLUMNS)
    writer.writerows(["" if v is None else v for v in row] for row in rows)
    return buffer.getvalue().encode("utf-8")


def csv_is_ours(present: bytes) -> bool:
    """A file that starts with the export's own header (an empty file is nobody's work)."""
    return present.startswith(CSV_HEADER.encode())


def csv_ends_ours(head: bytes, tail: bytes) -> bool:
    """`csv_is_ours` from a file's first and last bytes (a check before the export runs)."""
    return csv_is_ours(head)


def parquet_available() -> bool:
    try:
        import pyarrow  # noqa: F401
        import pyarrow.parquet  # noqa: F401
    except ImportError:
        return False
    return True


def parquet_bytes(rows: list[Row]) -> bytes:
    import pyarrow as pa
    import pyarrow.parquet as pq

    types = (
        pa.float64(), pa.int32(), pa.string(), pa.int32(), pa.int64(), pa.int64(),
        pa.float64(), pa.int32(), pa.int32(), pa.string(), pa.string(),
    )  # fmt: skip
    columns = list(zip(*rows, strict=True)) if rows else [() for _ in COLUMNS]
    schema = pa.schema(
        [pa.field(n, t) for n, t in zip(COLUMNS, types, strict=True)],
        metadata={PARQUET_MARK: b"gpu samples"},
    )
    table = pa.table(
        [pa.array(list(c), type=t) for c, t in zip(columns, types, strict=True)], schema=schema
    )
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    return bytes(sink.getvalue().to_pybytes())


TAIL_BYTES = 65536  # the footer's mark is within this of the end


def parquet_is_ours(present: bytes) -> bool:
    """A Parquet file (PAR1 at both ends) whose footer holds the export's mark."""
    return parquet_ends_ours(present[:4], present[-TAIL_BYTES:])


def parquet_ends_ours(head: bytes, tail: bytes) -> bool:
    """`parquet_is_ours` from a file's first and last bytes."""
    return head.startswith(b"PAR1") and tail.endswith(b"PAR1") and PARQUET_MARK in tail
