"""`gputui fit MODELS` for a models TOML or a Keras file: its layer models (and its
`kind = "transformer"` tables, through transformer_tables) on each GPU or every card."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from gputui.commands.fit import transformer_tables
from gputui.commands.fit.args import EXIT_PARTIAL, LAYER_OPTIMIZERS
from gputui.commands.fit.gpus import targets as fit_targets


def _input_shapes(given: list[str] | None) -> dict[str, list[int]]:
    from gputui.core.errors import UserError
    from gputui.core.textsafe import visible

    out: dict[str, list[int]] = {}
    for item in given or []:
        name, sep, dims = item.partition("=")
        try:
            shape = [int(d) for d in dims.split(",")]
        except ValueError:
            shape = []
        if not sep or not name or not shape or any(d < 1 or d > 2**31 - 1 for d in shape):
            raise UserError(
                f"--input-shape {visible(item)!r}: must be NAME=D,D,... with positive sizes"
            )
        out[name] = shape
    return out


def load(path: Path, args: argparse.Namespace) -> tuple[Any, ...]:
    """The models a file describes: a models TOML, or one Keras model file."""
    from gputui.core.errors import UserError
    from gputui.fit import detect_kind, load_any, shown

    kind = detect_kind(path)
    shapes = _input_shapes(args.input_shape)
    if kind not in ("toml", "keras-json", "keras-archive"):
        raise UserError(f"{shown(path)}: a {kind} file is not a Keras model or a models TOML")
    if kind == "toml" and (shapes or args.skip_unknown):
        raise UserError(
            "--input-shape and --skip-unknown apply to a Keras file; in a models TOML write "
            "input_shapes = { ... } and skip_unknown = true on the keras model's table"
        )
    runtime = getattr(args, "runtime", None)
    return load_any(path, input_shapes=shapes, skip_unknown=args.skip_unknown, runtime=runtime)


def _overridden(models: tuple[Any, ...], args: argparse.Namespace) -> tuple[Any, ...]:
    """The layer models with --mode/--optimizer applied (transformers take theirs later)."""
    from dataclasses import replace

    from gputui.core.errors import UserError

    if not models:
        return models
    first = f" (layer model {models[0].name!r}; pick transformers with --model)"
    if args.mode is not None and args.mode not in ("train", "inference", "eval"):
        raise UserError(f"--mode {args.mode}: applies to language models only{first}")
    if args.optimizer is not None and args.optimizer not in LAYER_OPTIMIZERS:
        raise UserError(
            f"--optimizer {args.optimizer}: applies to transformer models; layer models take "
            + ", ".join(LAYER_OPTIMIZERS)
            + first
        )
    changes = {k: getattr(args, k) for k in ("optimizer", "mode") if getattr(args, k)}
    if getattr(args, "runtime", None):
        changes.update(runtime=args.runtime, runtime_source="--runtime")
    out = tuple(replace(m, **changes) for m in models) if changes else models
    return tuple(replace(m, software=_software(m.software, args)) for m in out)


def _software(sw: Any, args: argparse.Namespace) -> Any:
    """The model's `Software` with --memory-format / --optimizer-impl on top (the flag wins)."""
    from dataclasses import replace

    from gputui.fit import memory_format

    changes: dict[str, Any] = {}
    if getattr(args, "memory_format", None):
        changes["memory_format"] = memory_format(args.memory_format)
    if getattr(args, "optimizer_impl", None):
        changes["optimizer"] = args.optimizer_impl
    return replace(sw, **changes) if changes else sw


def check_software_flags(
    args: argparse.Namespace, models: tuple[Any, ...], transformers: tuple[Any, ...]
) -> None:
    """--memory-format needs a layer model; --optimizer-impl a model that trains.

    Given where nothing they change is estimated they are refused, like the transformer
    flags on a layer model, rather than silently ignored."""
    from gputui.core.errors import UserError

    if getattr(args, "runtime", None) and not models:
        raise UserError(
            f"--runtime {args.runtime}: applies to layer models (a models TOML's layer tables, "
            "a Keras file), and none of the models chosen is one"
        )
    if getattr(args, "memory_format", None) and not models:
        raise UserError(
            f"--memory-format {args.memory_format}: applies to layer models (the layout of "
            "their convolutions), and none of the models chosen is one"
        )
    if getattr(args, "optimizer_impl", None):
        trains = any(m.mode == "train" for m in models) or any(
            (args.mode or t.workload.mode) == "train" for t in transformers
        )
        if not trains:
            given = f" (--mode {args.mode})" if args.mode else ""
            raise UserError(
                f"--optimizer-impl {args.optimizer_impl}: only for training, and no model "
                f"chosen trains{given}; an inference pass runs no optimizer"
            )


def run(args: argparse.Namespace) -> int:
    from gputui.core.errors import UserError
    from gputui.fit import shown
    from gputui.fit.paths import resolve_models_path
    from gputui.fit.report.document import header

    if args.batch_size is not None and not 1 <= args.batch_size <= 1 << 24:
        raise UserError(f"--batch-size: must be a positive integer, got {args.batch_size}")
    from gputui.commands.fit import torch_module

    if torch_module.handles(args):
        traced, path = torch_module.model(args)
        models: tuple[Any, ...] = (traced,)
        origin = "--torch"
    else:
        path, origin = resolve_models_path(args.models)
        models = load(path, args)
    if args.model:
        missing = [n for n in args.model if n not in {m.name for m in models}]
        if missing:
            from gputui.core.textsafe import visible

            known = ", ".join(m.name for m in models)
            raise UserError(
                f"{shown(path)}: no model named {visible(missing[0])!r} (models: {known})"
            )
        models = tuple(m for m in models if m.name in args.model)
    # kind = "transformer" tables: the LLM estimator (transformer_tables.py)
    models, transformers = transformer_tables.split(models)
    transformer_tables.check_flags(args, transformers)
    if not torch_module.handles(args):
        models = _overridden(models, args)
    check_software_flags(args, models, transformers)
    if args.precision in ("int8", "fp8"):
        training = [m.name for m in models if m.mode == "train"]
        if training:
            raise UserError(
                f"--precision {args.precision}: inference only, but model {training[0]!r} "
                'has mode = "train"'
            )
    # the cluster: fit/fleet.py
    if getattr(args, "prometheus", None) is not None or getattr(args, "match", None) is not None:
        from gputui.commands.fit.fleet import fleet_models, run_fit

        fleet = fleet_models(models, args) + transformer_tables.fleet_entries(
            transformers, args, with_layers=bool(models)
        )
        return run_fit(args, header(shown(path), origin, args.device, "fleet"), fleet)
    if args.all_cards:
        return _all_cards(args, models, path, origin, transformers)
    return _check(args, models, path, origin, transformers)


def _check(
    args: argparse.Namespace,
    models: tuple[Any, ...],
    path: Path,
    origin: str,
    transformers: tuple[Any, ...],
) -> int:
    """Each model on each GPU asked about (a catalog card, or the installed GPUs)."""
    from gputui.fit import FitRequest, advice_lines, check, shown
    from gputui.fit.report import document as doc
    from gputui.fit.report.graph_text import render_check
    from gputui.fit.report.targets import target_line

    targets, unavailable = fit_targets(args)
    answers = [
        check(
            FitRequest(
                m,
                tuple(targets),
                batch_size=args.batch_size,
                precision=args.precision or m.precision,
                backend=args.device,
                with_peak_tensors=True,
            )
        )
        for m in models
    ]
    # target-major, as the text prints them
    results = [a.checks[i] for i in range(len(targets)) for a in answers]
    llm = transformer_tables.estimates(transformers, targets, args, with_layers=bool(models))
    ok = all(_fits_now(r.chosen) for r in results)
    ok = ok and transformer_tables.all_fit_now(llm)
    # 0: every model fits on every GPU asked about; 1: one does not; 3: it fits where it
    # could be checked, but a GPU asked about could not be read (lost, memory unreadable).
    code = 1 if not ok else (EXIT_PARTIAL if unavailable else 0)
    observed = _observed(targets)
    if args.json:
        entries = [
            doc.graph_entry(
                m,
                batch_size=args.batch_size or m.batch_size,
                backend=args.device,
                checks=[r for r in results if r.model is m],
                mig_advice=advice_lines(
                    [(r.target, r.chosen.peak_bytes) for r in results if r.model is m], prefix=""
                ),
            )
            for m in models
        ]
        page = doc.document(
            doc.header(shown(path), origin, args.device, "check"),
            entries + transformer_tables.json_entries(llm),
            all_fit=ok and not unavailable,
            targets=targets,
            unavailable=unavailable,
        )
        if observed:
            page["observed_history"] = [h.to_json() for h in observed.values()]
        print(doc.dumps(page))
        return code
    print(f"models: {shown(path)} ({origin})")
    if args.device == "cpu":
        print(
            "backend: cpu (PyTorch's CPU allocator behaviour, tensor memory only: compare with "
            "a CPU measurement; a GPU adds its CUDA context and allocator slack)"
        )
    for u in unavailable:
        print()
        print(f"GPU {u.index}: {u.name}: unavailable, not checked: {u.reason}")
    for t in targets if results else ():  # transformers print their own GPU lines below
        print()
        print(target_line(t))
        for r in results:
            if r.target is t:
                print()
                print("\n".join(render_check(r, show_layers=args.layers)))
        seen = observed.get(_card(t))
        if seen is not None:
            print()
            print(seen.line())
    for m in models:  # MIG GPUs where the model fits no instance now: what would hold it
        placed = [(r.target, r.chosen.peak_bytes) for r in results if r.model is m]
        for line in advice_lines(placed, prefix=f"{m.name}: "):
            print()
            print(line)
    if llm:
        print("\n".join(transformer_tables.text_lines(llm, [target_line(t) for t in targets])))
    return code


def _card(target: Any) -> str:
    """The name observed peaks are kept under: the catalog card's, else NVML's."""
    return str(target.card.name if target.card is not None else target.name)


def _observed(targets: Any) -> dict[str, Any]:
    """What `fit --against` kept about each target's card (usage/observed.py), by card."""
    from gputui.usage.observed import history, load

    stored = load()
    found = {_card(t): history(_card(t), stored) for t in targets} if stored else {}
    return {card: h for card, h in found.items() if h is not None}


def _fits_now(e: Any) -> bool:
    verdict = e.verdict_free if e.verdict_free is not None else e.verdict
    return bool(verdict != "does not fit")


def _all_cards(
    args: argparse.Namespace,
    models: Any,
    path: Path,
    origin: str,
    transformers: tuple[Any, ...] = (),
) -> int:
    from gputui.catalog import load_catalog
    from gputui.commands.fit.args import batch_source, budget_usd
    from gputui.core.errors import UserError
    from gputui.fit import FitRequest, check, over_budget, shown
    from gputui.fit.report import document as doc
    from gputui.fit.report.graph_text import model_title
    from gputui.fit.report.ranking_text import batch_note, render_ranking

    if args.device != "cuda":
        raise UserError("--all-cards ranks cards as CUDA runs them; use --device cpu with --gpu")
    catalog = load_catalog()
    rankings = [
        (
            m,
            list(
                check(
                    FitRequest(
                        m,
                        catalog=catalog,
                        batch_size=args.batch_size,
                        precision=args.precision or m.precision,
                        budget_usd=budget_usd(args),
                    )
                ).ranked
            ),
        )
        for m in models
    ]
    llm = transformer_tables.rankings(transformers, args, with_layers=bool(models))
    ok = all(any(r.estimate.fits for r in ranked) for _, ranked in rankings)
    ok = ok and all(any(r.estimate.fits for r in rs) for _, _, rs in llm)
    if args.json:
        entries = [
            doc.graph_entry(
                m, batch_size=args.batch_size or m.batch_size, backend=args.device, ranked=ranked
            )
            for m, ranked in rankings
        ]
        page = doc.document(
            doc.header(shown(path), origin, args.device, "all-cards"),
            entries + transformer_tables.ranking_json(llm),
            all_fit=ok,
        )
        print(doc.dumps(page))
        return 0 if ok else 1
    print(f"models: {shown(path)} ({origin})")
    budget = budget_usd(args)
    left_out = (budget, over_budget(catalog.cards, budget)) if budget is not None else None
    own = "the model's batch_size: its file's, 32 where the file names none"
    for m, ranked in rankings:
        print()
        batch = args.batch_size or m.batch_size
        note = batch_note(batch, batch_source(args, own))
        lines = render_ranking(model_title(m, batch), ranked, batch=note, budget=left_out)
        print("\n".join(lines))
    if llm:
        print("\n".join(transformer_tables.ranking_lines(llm, args)))
    return 0 if ok else 1
