"""A long fuzz campaign over every input users hand to gputui, one family per input kind.

    python benchmarks/fuzz.py                       # 60 s per family
    python benchmarks/fuzz.py --seconds 300 --families models
    python benchmarks/fuzz.py --cases 500 --seed 7  # a fixed, reproducible set
    make fuzz FUZZ_ARGS="--seconds 600"

Each case is generated from (family, seed, index) by tests/fuzz/generators.py or
by a family module `tests/fuzz/family_<name>.py` (the same generators the
bounded property tests use) and run in a forked
worker process with a time limit and a memory limit, so a hang or a runaway
allocation is counted instead of stopping the campaign. Per family it prints
the counts: cases, accepted, rejected (one clean UserError line), tracebacks
(by exception type and the innermost gputui frame), hangs (over the time
limit) and wrong accepts (invalid input accepted, or an answer that breaks an
invariant), with the smallest reproducer of each class written to --save.
"""

from __future__ import annotations

import argparse
import contextlib
import multiprocessing as mp
import re
import sys
import tempfile
import time
import traceback
from collections import Counter, defaultdict
from multiprocessing.connection import Connection
from pathlib import Path
from random import Random
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "fuzz"))

import generators as gen  # noqa: E402

BUILTIN = ("scenario", "models", "catalog")


def _family_modules() -> dict[str, Any]:
    """`tests/fuzz/family_<name>.py` modules: each has FAMILY, make_case(rng),
    case_text(case) -> str and run_case(case, workdir) -> Outcome."""
    import importlib

    found: dict[str, Any] = {}
    for path in sorted((REPO / "tests" / "fuzz").glob("family_*.py")):
        module = importlib.import_module(path.stem)
        found[module.FAMILY] = module
    return found


PLUGINS = _family_modules()
FAMILIES = BUILTIN + tuple(PLUGINS)


def make_case(family: str, seed: int, index: int) -> Any:
    rng = Random(f"{family}:{seed}:{index}")
    if family in PLUGINS:
        return PLUGINS[family].make_case(rng)
    if family == "scenario":
        return gen.scenario_case(rng)
    if family == "models":
        return gen.model_case(rng)
    return gen.catalog_case(rng)


def case_text(family: str, case: Any) -> str | bytes:
    """What a reproducer file holds: text, or bytes for binary formats (GGUF)."""
    if family in PLUGINS:
        text: str | bytes = PLUGINS[family].case_text(case)
        return text
    if family == "scenario":
        return str(case)
    if family == "models":
        return str(case[0])
    return f"# replaces catalog/cards/{case[0]}\n{case[1]}"


def run_case(family: str, case: Any, workdir: Path) -> gen.Outcome:
    if family in PLUGINS:
        outcome: gen.Outcome = PLUGINS[family].run_case(case, workdir)
        return outcome
    if family == "scenario":
        return gen.check_scenario(case, workdir)
    if family == "models":
        return gen.check_models(case[0], case[1], workdir)
    return gen.check_catalog(case[0], case[1])


def _where(exc: BaseException) -> str:
    """The innermost frame in gputui (and the library frame under it, if any)."""
    frames = traceback.extract_tb(exc.__traceback__)
    ours = [f for f in frames if "/gputui/" in f.filename and "/tests/" not in f.filename]
    place = ""
    if ours:
        f = ours[-1]
        place = f"{f.filename.split('/gputui/', 1)[1]}:{f.lineno} {f.name}"
    if frames and frames[-1] not in ours:
        last = frames[-1]
        place += f" -> {Path(last.filename).name}:{last.lineno} {last.name}"
    return place or "?"


def _worker(conn: Connection, memory_mib: int) -> None:
    import resource

    limit = memory_mib << 20
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 1000))
    with tempfile.TemporaryDirectory(prefix="gputui-fuzz-") as tmp:
        workdir = Path(tmp)
        while True:
            job = conn.recv()
            if job is None:
                return
            family, seed, index = job
            try:
                outcome = run_case(family, make_case(family, seed, index), workdir)
                conn.send((outcome.kind, outcome.detail))
            except BaseException as exc:  # every crash is a finding, MemoryError included
                detail = f"{type(exc).__name__} at {_where(exc)}"
                conn.send(("traceback", detail + f" | {str(exc)[:120]}"))


class Pool:
    """One worker process, restarted after a hang."""

    def __init__(self, memory_mib: int) -> None:
        self._memory = memory_mib
        self._ctx = mp.get_context("fork")
        self._start()

    def _start(self) -> None:
        self._conn, child = self._ctx.Pipe()
        self._proc = self._ctx.Process(target=_worker, args=(child, self._memory), daemon=True)
        self._proc.start()
        child.close()

    def run(self, job: tuple[str, int, int], timeout: float) -> tuple[str, str]:
        self._conn.send(job)
        if self._conn.poll(timeout):
            try:
                result: tuple[str, str] = self._conn.recv()
                return result
            except EOFError:
                pass
            self._restart()
            return ("traceback", "worker died (killed by the memory limit or a signal)")
        self._restart()
        return ("hang", f"over {timeout:g} s")

    def _restart(self) -> None:
        self._proc.kill()
        self._proc.join()
        self._start()

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._conn.send(None)
        self._proc.join(5)
        if self._proc.is_alive():
            self._proc.kill()


def failure_class(kind: str, detail: str) -> str:
    """What groups equal mistakes: the part of the detail before " | "."""
    if kind == "hang":
        return "hang"
    return detail.split(" | ", 1)[0]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--families", default=",".join(FAMILIES))
    parser.add_argument("--seconds", type=float, default=60.0, help="per family (default 60)")
    parser.add_argument("--cases", type=int, default=None, help="per family, instead of --seconds")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds per case (default 10)")
    parser.add_argument("--memory-mib", type=int, default=3072, help="address-space limit per worker")
    parser.add_argument("--save", type=Path, default=Path(tempfile.gettempdir()) / "gputui-fuzz")
    args = parser.parse_args(argv)
    families = [f for f in args.families.split(",") if f]
    for f in families:
        if f not in FAMILIES:
            parser.error(f"unknown family {f!r} (choose from {', '.join(FAMILIES)})")
    args.save.mkdir(parents=True, exist_ok=True)
    pool = Pool(args.memory_mib)
    total_bad = 0
    try:
        for family in families:
            counts: Counter[str] = Counter()
            classes: dict[str, Counter[str]] = defaultdict(Counter)
            smallest: dict[tuple[str, str], tuple[int, int, str]] = {}
            started = time.monotonic()
            index = 0
            while (args.cases is not None and index < args.cases) or (
                args.cases is None and time.monotonic() - started < args.seconds
            ):
                kind, detail = pool.run((family, args.seed, index), args.timeout)
                counts["cases"] += 1
                counts[kind] += 1
                if kind in ("traceback", "hang", "wrong-accept"):
                    cls = failure_class(kind, detail)
                    classes[kind][cls] += 1
                    text = case_text(family, make_case(family, args.seed, index))
                    key = (kind, cls)
                    if key not in smallest or len(text) < smallest[key][0]:
                        smallest[key] = (len(text), index, detail)
                        name = re.sub(r"[^A-Za-z0-9]+", "-", f"{family}-{kind}-{cls}")[:120]
                        if isinstance(text, bytes):
                            (args.save / f"{name}.bin").write_bytes(text)
                        else:
                            (args.save / f"{name}.toml").write_text(text, encoding="utf-8")
                index += 1
            elapsed = time.monotonic() - started
            bad = counts["traceback"] + counts["hang"] + counts["wrong-accept"]
            total_bad += bad
            print(
                f"{family}: {counts['cases']} cases in {elapsed:.0f} s: {counts['ok']} accepted, "
                f"{counts['rejected']} rejected, {counts['traceback']} tracebacks, "
                f"{counts['hang']} hangs, {counts['wrong-accept']} wrong accepts"
            )
            for kind in ("traceback", "hang", "wrong-accept"):
                for cls, n in classes[kind].most_common():
                    size, index_, detail = smallest[(kind, cls)]
                    print(f"  {kind:12} {n:5}  {cls}")
                    print(f"  {'':12} {'':5}  smallest: case {index_} ({size} chars): {detail[:160]}")
            sys.stdout.flush()
    finally:
        pool.close()
    print(f"reproducers: {args.save}/ (family-kind-class.toml; replay: --seed {args.seed} --cases N)")
    return 1 if total_bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
