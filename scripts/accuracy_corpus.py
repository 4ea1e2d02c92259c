"""benchmarks/accuracy.md: every measured job of the benchmarks against gputui's estimate.

    python scripts/accuracy_corpus.py            # rewrite benchmarks/accuracy.md
    python scripts/accuracy_corpus.py --check    # exit 1 if it is not what the data gives

The data is benchmarks/measured/*.csv, one file per source (a harness, a runtime, a
measuring session), so a new source adds a file and touches nothing else. Each file:
`#` comment lines first (where the rows come from, how they were measured), then a CSV
header and one row per job with the columns

    kind           transformer | graph | torch (a module traced by fit --torch)
    family         the architecture family the estimate treats it as (llama, cnn, rnn, ...)
    model          the model's name
    mode           train | inference | eval | generate
    runtime        what ran it (e.g. "transformers 5.25, pytorch 2.13 cpu", "keras-torch")
    setting        batch, sequence, precision, attention, ... (free text)
    measured_mib   the measured peak in MiB
    estimated_mib  gputui's estimate for the same job in MiB
    source         the harness or table the row comes from

The error is (estimated - measured) / measured. Per kind and family the summary gives
the count, the median (p50) and 95th-percentile (p95, nearest rank) absolute error and
the worst under-estimate, the error that matters most for "will it fit".
"""

from __future__ import annotations

import argparse
import csv
import io
import math
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "benchmarks" / "measured"
OUT = REPO / "benchmarks" / "accuracy.md"
COLUMNS = (
    "kind", "family", "model", "mode", "runtime", "setting", "measured_mib", "estimated_mib",
    "source",
)  # fmt: skip
KINDS = ("transformer", "graph", "torch")
MODES = ("train", "inference", "eval", "generate")


class CorpusError(ValueError):
    """A data file that is not the corpus format (file, line and field named)."""


@dataclass(frozen=True, slots=True)
class Job:
    kind: str
    family: str
    model: str
    mode: str
    runtime: str
    setting: str
    measured: float
    estimated: float
    source: str
    file: str

    @property
    def error(self) -> float:
        """Signed relative error of the estimate, in percent."""
        return (self.estimated - self.measured) / self.measured * 100


def _number(text: str, where: str, field: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise CorpusError(f"{where}: {field} {text!r} is not a number") from None
    if not math.isfinite(value) or value <= 0:
        raise CorpusError(f"{where}: {field} {text!r} must be a positive number of MiB")
    return value


def read_file(path: Path) -> list[Job]:
    """The jobs of one data file (CorpusError naming the line and field of a bad one)."""
    lines = [ln for ln in path.read_text(encoding="utf-8").splitlines() if not ln.startswith("#")]
    reader = csv.DictReader(io.StringIO("\n".join(lines)))
    if tuple(reader.fieldnames or ()) != COLUMNS:
        raise CorpusError(f"{path.name}: header must be {','.join(COLUMNS)}")
    jobs = []
    for n, row in enumerate(reader, start=2):
        where = f"{path.name} row {n - 1}"
        if None in row or any(row[c] is None for c in COLUMNS):
            raise CorpusError(f"{where}: expected {len(COLUMNS)} fields")
        if row["kind"] not in KINDS:
            raise CorpusError(f"{where}: kind {row['kind']!r} is not one of {', '.join(KINDS)}")
        if row["mode"] not in MODES:
            raise CorpusError(f"{where}: mode {row['mode']!r} is not one of {', '.join(MODES)}")
        for c in ("family", "model", "runtime"):
            if not row[c].strip():
                raise CorpusError(f"{where}: {c} is empty")
        jobs.append(
            Job(
                row["kind"],
                row["family"],
                row["model"],
                row["mode"],
                row["runtime"],
                row["setting"],
                _number(row["measured_mib"], where, "measured_mib"),
                _number(row["estimated_mib"], where, "estimated_mib"),
                row["source"],
                path.name,
            )  # fmt: skip
        )
    return jobs


def read_all(folder: Path = DATA) -> list[Job]:
    return [job for path in sorted(folder.glob("*.csv")) for job in read_file(path)]


def nearest_rank(values: list[float], q: float) -> float:
    """The q-quantile by nearest rank (no interpolation: always a measured job's error)."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


@dataclass(frozen=True, slots=True)
class Summary:
    jobs: int
    p50: float
    p95: float
    worst_under: Job | None  # the most negative error, None when nothing is under

    @classmethod
    def of(cls, jobs: list[Job]) -> Summary:
        errors = [abs(j.error) for j in jobs]
        under = min(jobs, key=lambda j: j.error)
        return cls(
            len(jobs),
            nearest_rank(errors, 0.5),
            nearest_rank(errors, 0.95),
            under if under.error < 0 else None,
        )


def _cell(text: str) -> str:
    return text.replace("|", "/").replace("\n", " ")


def _worst(s: Summary) -> str:
    j = s.worst_under
    if j is None:
        return "none under"
    return f"{j.error:+.1f} % ({_cell(j.model)}, {j.mode}, {_cell(j.setting)})"


def render(jobs: list[Job]) -> str:
    """The whole of benchmarks/accuracy.md for these jobs."""
    out = [
        "# Accuracy corpus: every measured job against gputui's estimate",
        "",
        "Generated by `python scripts/accuracy_corpus.py` from `benchmarks/measured/*.csv` (one",
        "file per source; the format is in the script's docstring): do not edit by hand. Error",
        "= (estimated - measured) / measured; p50 and p95 are of the absolute error (nearest",
        "rank); the worst under-estimate is the most negative error. Where each row was measured,",
        "and how, is in its data file's comments and the `source` column; the figures come from",
        "a loaded shared CPU machine unless the runtime says otherwise.",
        "",
        f"{len(jobs)} jobs from {len({j.file for j in jobs})} data files.",
        "",
        "## Summary per kind and family",
        "",
        "| kind | family | jobs | p50 abs error | p95 abs error | worst under-estimate |",
        "|---|---|---:|---:|---:|---|",
    ]
    groups: dict[tuple[str, str], list[Job]] = {}
    for j in jobs:
        groups.setdefault((j.kind, j.family), []).append(j)
    for (kind, family), members in sorted(groups.items()):
        s = Summary.of(members)
        out.append(
            f"| {kind} | {_cell(family)} | {s.jobs} | {s.p50:.1f} % | {s.p95:.1f} % | {_worst(s)} |"
        )
    for kind in KINDS:
        members = [j for j in jobs if j.kind == kind]
        if members:
            s = Summary.of(members)
            out.append(
                f"| **{kind}** | **all** | {s.jobs} | {s.p50:.1f} % | {s.p95:.1f} % | {_worst(s)} |"
            )
    if jobs:
        s = Summary.of(jobs)
        out.append(f"| **all** | | {s.jobs} | {s.p50:.1f} % | {s.p95:.1f} % | {_worst(s)} |")
    out += ["", "## Per mode", "", "| mode | jobs | p50 abs error | p95 abs error | worst under |"]
    out.append("|---|---:|---:|---:|---|")
    for mode in MODES:
        members = [j for j in jobs if j.mode == mode]
        if members:
            s = Summary.of(members)
            out.append(f"| {mode} | {s.jobs} | {s.p50:.1f} % | {s.p95:.1f} % | {_worst(s)} |")
    out += ["", "## Every job", ""]
    out.append(
        "| kind | family | model | mode | runtime | setting | measured MiB | estimated MiB "
        "| error | data file |"
    )
    out.append("|---|---|---|---|---|---|---:|---:|---:|---|")
    for j in jobs:
        out.append(
            f"| {j.kind} | {_cell(j.family)} | {_cell(j.model)} | {j.mode} | {_cell(j.runtime)} "
            f"| {_cell(j.setting)} | {j.measured:,.2f} | {j.estimated:,.2f} | {j.error:+.1f} % "
            f"| {j.file} |"
        )
    return "\n".join(out) + "\n"


def main(argv: Iterable[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="exit 1 if accuracy.md is stale")
    args = ap.parse_args(list(argv) if argv is not None else None)
    try:
        text = render(read_all())
    except CorpusError as exc:
        print(f"accuracy_corpus: {exc}", file=sys.stderr)
        return 2
    if args.check:
        current = OUT.read_text(encoding="utf-8") if OUT.exists() else ""
        if current != text:
            print(
                "benchmarks/accuracy.md is stale: run scripts/accuracy_corpus.py", file=sys.stderr
            )
            return 1
        return 0
    OUT.write_text(text, encoding="utf-8")
    print(f"{OUT.relative_to(REPO)}: {text.count(chr(10))} lines")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
