"""How long one fit estimate takes (the estimate itself, not Python's start-up).

Cases, as issue 9 asks: every shipped model on every catalog card (what
`gputui fit --all-cards` computes), and ResNet50 / DenseNet121 read from their
Keras JSON checked on one card (all precisions, plus the tensors alive at the
peak). Each case is timed with the current code and, side by side in the same
run, with a baseline that walks every phase afresh for every card and precision
(no per-model cache, no upper envelope): what the estimate cost before. A middle
column keeps the memory caches but rebuilds the roofline's op list for every card
and precision (no card-independent op cache): what the op cache saves.

Run:  .venv/bin/python benchmarks/fit_speed.py [--repeat 3] [--markdown]
Aim:  under 0.3 s per estimate.
"""

from __future__ import annotations

import argparse
import contextlib
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from gputui.catalog import load_catalog
from gputui.fit.core import roofline, software
from gputui.fit.core.target import Target
from gputui.fit.entry import FitRequest
from gputui.fit.entry import check as check_any
from gputui.fit.graph import estimate
from gputui.fit.graph import speed as graph_speed
from gputui.fit.graph.estimate import check
from gputui.fit.importers.modelsfile import ModelSpec, layer_models, load_keras_model, load_models

ROOT = Path(__file__).resolve().parent.parent


@contextlib.contextmanager
def baseline() -> Iterator[None]:
    """Every phase of every walk scanned, nothing reused between cards or precisions."""
    envelope, cached, hulls = estimate.envelope, estimate.cached_phases, estimate.cached_envelope

    def fresh(model: ModelSpec, p: estimate.Precision, backend: estimate.Backend) -> list:  # type: ignore[type-arg]
        return estimate.model_phases(model, p, backend)

    estimate.envelope = lambda phases: phases  # type: ignore[assignment]
    estimate.cached_phases = fresh  # type: ignore[assignment]
    estimate.cached_envelope = fresh  # type: ignore[assignment]
    try:
        yield
    finally:
        estimate.envelope, estimate.cached_phases = envelope, cached
        estimate.cached_envelope = hulls


@contextlib.contextmanager
def no_op_cache() -> Iterator[None]:
    """The roofline's op list (and its compiled form) rebuilt for every card and precision."""
    cached = graph_speed._cached_ops

    def fresh(
        model: ModelSpec,
        precision: str,
        batch: int,
        mode: str | None,
        sw: software.Software = software.DEFAULT_SOFTWARE,
    ) -> tuple[tuple[roofline.Op, ...], roofline.Compiled]:
        ops = tuple(graph_speed._model_ops(model, precision, batch, mode, sw))
        return ops, roofline.compile_ops(ops)

    graph_speed._cached_ops = fresh  # type: ignore[assignment]
    try:
        yield
    finally:
        graph_speed._cached_ops = cached


def timed(fn: Callable[[], object], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        estimate._CACHE.clear()
        estimate._ENVELOPES.clear()
        graph_speed._OPS_CACHE.clear()
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--repeat", type=int, default=3, help="best of N runs (default 3)")
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args(argv)
    catalog = load_catalog()
    card = catalog.find("RTX 3090")
    target = Target(
        card.name,
        card.memory_bytes,
        catalog.architectures.get(card.architecture),
        card,
        card.compute_capability,
    )
    cases: list[tuple[str, Callable[[], object]]] = []
    for m in layer_models(load_models(ROOT / "examples" / "models.toml")):
        cases.append(
            (
                f"{m.name}: all {len(catalog.cards)} cards",
                lambda m=m: check_any(FitRequest(m, catalog=catalog)).ranked,
            )
        )
    fixtures = ROOT / "tests" / "fixtures" / "keras"
    for name in ("resnet50", "densenet121"):
        m = load_keras_model(fixtures / f"{name}.json")
        cases.append(
            (
                f"{name} (Keras JSON): RTX 3090, all precisions + peak tensors",
                lambda m=m: check(m, target, with_peak_tensors=True),
            )
        )
        cases.append(
            (
                f"{name} (Keras JSON): all {len(catalog.cards)} cards",
                lambda m=m: check_any(FitRequest(m, catalog=catalog)).ranked,
            )
        )
    rows = []
    for label, fn in cases:
        now = timed(fn, args.repeat)
        with no_op_cache():
            uncached = timed(fn, args.repeat)
        with baseline(), no_op_cache():
            before = timed(fn, args.repeat)
        rows.append((label, now, uncached, before))
        print(
            f"{label:62} {now * 1000:8.1f} ms   no op cache {uncached * 1000:8.1f} ms"
            f"   baseline {before * 1000:8.1f} ms",
            flush=True,
        )
    if args.markdown:
        print(
            "\n| case | estimate (s) | without the op cache (s) | baseline (s) |"
            "\n|---|---:|---:|---:|"
        )
        for label, now, uncached, before in rows:
            print(f"| {label} | {now:.3f} | {uncached:.3f} | {before:.3f} |")
    worst = max(now for _, now, _, _ in rows)
    print(f"\nslowest estimate {worst:.3f} s (aim: under 0.3 s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
