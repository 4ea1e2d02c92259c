"""`gputui fit MODELS --against RECORDING --pid PID`: each model's estimate beside the
memory that process really took.

Same terms on both sides: NVML's used memory of a process is its CUDA context plus what
its allocator holds reserved, so the estimate compared is the whole breakdown (tensors,
context and allocator reserve), against the process's peak on the GPU where it peaked.
Each comparison is kept (usage/observed.py) for later estimates on that card.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, replace
from typing import Any

GIB = 1 << 30


@dataclass(frozen=True)
class Observed:
    """The process as the recording saw it."""

    pid: int
    start: float | None
    first_seen: float
    last_seen: float
    ended: bool
    command: str | None
    gpu: int
    peak: int
    snapshot: Any  # one snapshot with that GPU readable: the card it ran on


def observe(recording: Any, pid: int) -> Observed:
    """The last process with that PID in the recording, on the GPU where it held most."""
    from gputui.commands.report import lifetime
    from gputui.core.errors import UserError
    from gputui.usage.summary import summarise

    since, until, gpus = lifetime(recording, pid, None, None)
    seen: dict[int, Any] = {}

    def keep(snap: Any) -> None:
        for d in snap.devices:
            if d.index in gpus and d.sample is not None:
                seen[d.index] = snap

    run = summarise(
        recording.snapshots(since=since, until=until), pid=pid, gpus=gpus, on_snapshot=keep
    )
    proc = run.processes[-1]
    if not proc.memory_peak_by_gpu:
        raise UserError(
            f"--pid: process {pid}: its GPU memory is unknown in the recording (NVML could "
            "not say; another PID namespace or a driver without per-process memory)",
            exit_code=1,
        )
    gpu, peak = max(proc.memory_peak_by_gpu.items(), key=lambda kv: kv[1])
    if gpu not in seen:
        raise UserError(f"--pid: process {pid}: GPU {gpu} was never readable", exit_code=1)
    return Observed(
        pid, proc.start, proc.first_seen, proc.last_seen, proc.ended, proc.command, gpu, peak,
        seen[gpu],
    )  # fmt: skip


def _target(observed: Observed) -> Any:
    from gputui.catalog import load_catalog
    from gputui.core.errors import UserError
    from gputui.fit import targets_from_snapshot

    found = [
        t
        for t in targets_from_snapshot(observed.snapshot, load_catalog())
        if t.index == observed.gpu
    ]
    if not found:
        raise UserError(f"--pid: GPU {observed.gpu}'s memory is unknown in the recording", 1)
    return replace(found[0], memory_free=None)  # the card, not what was free then


def _models(path: Any, args: argparse.Namespace) -> tuple[Any, ...]:
    """The models a file describes: a models TOML or Keras file as `gputui fit` reads them
    (its flags applied), any other kind (HF config or folder, GGUF) with its own workload."""
    from gputui.commands.fit.models_file import load
    from gputui.fit import detect_kind, load_any

    if detect_kind(path) in ("toml", "keras-json", "keras-archive"):
        return tuple(load(path, args))
    return tuple(load_any(path))


def run(args: argparse.Namespace) -> int:
    from gputui.commands.report import MAX_RECORDING_BYTES, open_run, parse_pid
    from gputui.core.errors import UserError
    from gputui.core.inputfile import check_option_file
    from gputui.fit import FitRequest, check, shown
    from gputui.fit.paths import resolve_models_path
    from gputui.usage import observed as store

    if args.against is None:
        raise UserError("--pid: only with --against RECORDING")
    check_option_file(args.against, "--against", cap=MAX_RECORDING_BYTES)
    if args.pid is None:
        raise UserError(
            f"--against {shown(args.against)}: needs --pid PID, the process to compare with"
        )
    pid = parse_pid(args.pid)
    assert pid is not None
    if args.models is not None:  # a name the OS refuses is one line, as in `gputui fit`
        from gputui.core.inputfile import check_path_name

        check_path_name(args.models, "MODELS")
    path, _origin = resolve_models_path(args.models)
    models = _models(path, args)
    if args.model:
        models = tuple(m for m in models if m.name in args.model)
        if not models:
            raise UserError(f"--model: no such model in {shown(path)}")
    seen = observe(open_run(args.against), pid)
    target = _target(seen)
    framework = store.framework_of(seen.command)
    import time

    now = time.time()
    rows = []
    for m in models:
        answer = check(
            FitRequest(
                m,
                (target,),
                batch_size=args.batch_size,
                precision=args.precision or getattr(m, "precision", None),
                backend="cuda",
            )
        )
        b = answer.checks[0].chosen.breakdown
        rows.append((m.name, b))
    card = target.card.name if target.card is not None else target.name
    comparisons = [
        store.Comparison(card, framework, name, b.total, seen.peak, pid, seen.start, now)
        for name, b in rows
    ]
    past = store.history(card)  # before this run's comparisons join it
    kept = store.store(comparisons)
    if args.json:
        _print_json(seen, card, framework, rows, past, kept)
    else:
        _print_text(seen, card, framework, rows, past, kept)
    return 0


def _gib(n: int) -> str:
    return f"{n / GIB:.2f} GiB"


def _verdict(ratio: float) -> str:
    pct = round((ratio - 1) * 100)
    if pct == 0:
        return "as predicted"
    return f"{abs(pct)} % {'more' if pct > 0 else 'less'} than predicted"


def _print_text(
    seen: Observed, card: str, framework: str, rows: list[Any], past: Any, kept: str | None
) -> None:
    from gputui.core.textsafe import visible
    from gputui.usage.timefmt import when

    command = visible(seen.command or "command unknown")[:80]
    end = when(seen.last_seen) if seen.ended else "still running at the recording's end"
    print(f"process {seen.pid} ({command}; framework: {framework}) on GPU {seen.gpu}, {card}")
    print(f"seen {when(seen.first_seen)} to {end}")
    print(
        f"observed peak: {_gib(seen.peak)} (NVML's used memory: CUDA context + allocator reserved)"
    )
    print()
    header = ("model", "tensors", "+ context", "+ allocator", "= estimate", "observed", "ratio")
    table = [header]
    for name, b in rows:
        ratio = seen.peak / b.total
        table.append(
            (
                visible(name), _gib(b.tensor_bytes), _gib(b.cuda_context), _gib(b.allocator),
                _gib(b.total), _gib(seen.peak), f"{ratio:.2f} ({_verdict(ratio)})",
            )
        )  # fmt: skip
    widths = [max(len(r[i]) for r in table) for i in range(len(header))]
    for r in table:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())
    if past is not None:
        print()
        print(past.line())
    print()
    print("comparison " + (kept or "kept for later estimates on this card"))


def _print_json(
    seen: Observed, card: str, framework: str, rows: list[Any], past: Any, kept: str | None
) -> None:
    import json

    doc = {
        "schema_version": 1,
        "process": {
            "pid": seen.pid,
            "start": seen.start,
            "first_seen": seen.first_seen,
            "last_seen": seen.last_seen,
            "ended": seen.ended,
            "command": seen.command,
            "framework": framework,
            "gpu": seen.gpu,
            "card": card,
            "observed_peak_bytes": seen.peak,
        },
        "comparisons": [
            {
                "model": name,
                "tensor_bytes": b.tensor_bytes,
                "cuda_context_bytes": b.cuda_context,
                "allocator_bytes": b.allocator,
                "estimate_bytes": b.total,
                "observed_bytes": seen.peak,
                "ratio": seen.peak / b.total,
            }
            for name, b in rows
        ],
        "history": None if past is None else past.to_json(),
        "kept": kept is None,
    }
    print(json.dumps(doc, indent=2))
