"""The published points are data the comparison trusts: each names a catalog card and a
pinned source, and carries a positive throughput with its unit."""

from __future__ import annotations

import csv
import re
from pathlib import Path

from gputui.catalog import load_catalog
from gputui.fit.core.precision_names import PRECISIONS

PUBLISHED = Path(__file__).resolve().parents[3] / "benchmarks" / "published"
FIELDS = [
    "workload", "model", "mode", "batch", "precision", "gpu", "gpu_as_published",
    "throughput", "unit", "source", "table", "notes",
]  # fmt: skip
PINNED = re.compile(r"^https://github\.com/[\w.-]+/[\w.-]+/blob/[0-9a-f]{40}/\S+$")


def test_every_published_row_is_sourced_and_names_a_catalog_card() -> None:
    cards = {c.name for c in load_catalog().cards}
    files = sorted(PUBLISHED.glob("*.csv"))
    assert len(files) >= 3
    seen = 0
    for path in files:
        with path.open(newline="") as f:
            reader = csv.DictReader(f)
            assert reader.fieldnames == FIELDS, path.name
            for i, row in enumerate(reader):
                where = f"{path.name} row {i + 2}"
                assert row["gpu"] in cards, where
                assert PINNED.match(row["source"]), where
                assert row["table"].strip(), where
                assert float(row["throughput"]) > 0 and row["unit"].endswith("/s"), where
                assert int(row["batch"]) >= 1, where
                assert row["mode"] in ("train", "inference", "prefill", "decode"), where
                if row["mode"] in ("train", "inference"):
                    assert row["precision"] in PRECISIONS, where
                seen += 1
    assert seen >= 250
