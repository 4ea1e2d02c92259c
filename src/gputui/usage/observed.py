"""Observed peaks beside fit estimates, kept per card and framework in the user data dir.

`gputui fit --against` stores each comparison (the estimate, context and allocator
reserve included, and the process's observed NVML peak); later estimates on the same
card read them back: "on this machine, jobs like this used 12 % more than predicted".
The file is this user's and gputui's own: read only if this user owns it
(core/userfile.read_own), replaced only when it is a file of this format (never a file
gputui did not write), bounded to MAX_ENTRIES (the oldest go first).

Where: `$GPUTUI_DATA_DIR` when set (empty: nothing is kept), else platformdirs'
user data dir (~/.local/share/gputui on Linux).
"""

from __future__ import annotations

import json
import os
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ENV = "GPUTUI_DATA_DIR"
FILE_NAME = "observed-peaks.json"
KIND = "gputui observed peaks"
FORMAT = 1
MAX_ENTRIES = 1000
MAX_BYTES = 4 << 20
MAX_TEXT = 200

# Words of a command line that name the framework that allocated the memory, in order.
FRAMEWORKS: tuple[tuple[str, str], ...] = (
    ("vllm", "vllm"),
    ("sglang", "sglang"),
    ("llama-server", "llama.cpp"),
    ("llama-cli", "llama.cpp"),
    ("llama_cpp", "llama.cpp"),
    ("tensorflow", "tensorflow"),
    ("keras", "tensorflow"),
    ("jax", "jax"),
    ("deepspeed", "pytorch"),
    ("torchrun", "pytorch"),
    ("accelerate", "pytorch"),
    ("torch", "pytorch"),
    ("lightning", "pytorch"),
)


def framework_of(command: str | None) -> str:
    """The framework a command line names, else "unknown" (`python train.py` says nothing)."""
    text = (command or "").lower()
    return next((name for word, name in FRAMEWORKS if word in text), "unknown")


@dataclass(frozen=True)
class Comparison:
    """One process's observed peak beside one model's estimate on one card."""

    card: str
    framework: str
    model: str
    estimate_bytes: int  # tensors + CUDA context + allocator reserve
    observed_bytes: int  # NVML's used memory of the process at its peak
    pid: int
    start: float | None
    at: float  # when the comparison was made

    @property
    def ratio(self) -> float:
        return self.observed_bytes / self.estimate_bytes

    def key(self) -> tuple[Any, ...]:
        return (self.card, self.model, self.pid, self.start)


@dataclass(frozen=True)
class History:
    """What the comparisons on one card say: the median observed/estimate ratio."""

    card: str
    jobs: int
    median_ratio: float
    frameworks: tuple[str, ...]

    def line(self) -> str:
        pct = round((self.median_ratio - 1) * 100)
        how = f"{pct} % more than" if pct > 0 else f"{-pct} % less than" if pct < 0 else "as"
        kinds = ", ".join(self.frameworks)
        return (
            f"on this machine, jobs like this used {how} predicted (median of {self.jobs} "
            f"on {self.card}; {kinds})"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "card": self.card,
            "jobs": self.jobs,
            "median_ratio": self.median_ratio,
            "frameworks": list(self.frameworks),
        }


def data_file() -> Path | None:
    configured = os.environ.get(ENV)
    if configured is not None:
        return Path(configured) / FILE_NAME if configured else None
    import platformdirs

    return Path(platformdirs.user_data_dir("gputui")) / FILE_NAME


def _ours(raw: bytes) -> list[Comparison] | None:
    """The comparisons of a file of this format; None for anything else."""
    try:
        doc = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(doc, dict) or doc.get("kind") != KIND or doc.get("format") != FORMAT:
        return None
    entries = doc.get("entries")
    if not isinstance(entries, list):
        return None
    return [c for c in (_entry(e) for e in entries[-MAX_ENTRIES:]) if c is not None]


def _entry(e: Any) -> Comparison | None:
    """One stored comparison, type- and range-checked (the file can be edited): None if bad."""
    if not isinstance(e, dict):
        return None
    texts = [e.get(k) for k in ("card", "framework", "model")]
    sizes = [e.get(k) for k in ("estimate_bytes", "observed_bytes")]
    pid, start, at = e.get("pid"), e.get("start"), e.get("at")
    if not all(isinstance(t, str) and 0 < len(t) <= MAX_TEXT and t.isprintable() for t in texts):
        return None
    if not all(type(s) is int and 0 < s < 1 << 50 for s in sizes):
        return None
    if type(pid) is not int or not isinstance(at, (int, float)):
        return None
    if start is not None and not isinstance(start, (int, float)):
        return None
    return Comparison(
        str(texts[0]), str(texts[1]), str(texts[2]), int(sizes[0] or 0), int(sizes[1] or 0),
        pid, None if start is None else float(start), float(at),
    )  # fmt: skip


def load(path: Path | None = None) -> list[Comparison]:
    """The stored comparisons; none when there is no file, or it is not ours to read."""
    from gputui.core.userfile import read_own

    path = path or data_file()
    found = None if path is None else read_own(path, MAX_BYTES)
    if found is None:
        return []
    return _ours(found[0]) or []


def store(new: list[Comparison], path: Path | None = None) -> str | None:
    """Add comparisons (a repeated one replaces its earlier self); the reason when the file
    could not be written (the comparison is still shown, only not kept)."""
    from gputui.core.userfile import replace_file

    path = path or data_file()
    if path is None:
        return f"not kept (${ENV} is empty)"
    keys = {c.key() for c in new}
    kept = [c for c in load(path) if c.key() not in keys] + new
    doc = {
        "kind": KIND,
        "format": FORMAT,
        "entries": [c.__dict__ for c in kept[-MAX_ENTRIES:]],
    }
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        replace_file(
            path,
            json.dumps(doc, indent=1).encode(),
            new_mode=0o600,
            may_replace=lambda present: _ours(present) is not None,
        )
    except OSError as exc:
        return f"not kept: {exc.strerror or exc}"
    return None


def history(card: str, comparisons: list[Comparison] | None = None) -> History | None:
    """What the stored comparisons on `card` say; None without any."""
    mine = [c for c in (load() if comparisons is None else comparisons) if c.card == card]
    if not mine:
        return None
    return History(
        card=card,
        jobs=len(mine),
        median_ratio=statistics.median(c.ratio for c in mine),
        frameworks=tuple(sorted({c.framework for c in mine})),
    )
