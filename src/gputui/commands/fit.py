"""`gputui fit`: will each model of a models file fit on a GPU, at what batch size, in which precision."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from gputui.commands import fit_llm, fit_transformers
from gputui.fit.core.software import MEMORY_FORMAT_CHOICES, OPTIMIZER_IMPLS

# Kept here (not imported) so the parser stays import-light; a test checks it
# matches gputui.fit.core.precision.PRECISIONS.
PRECISION_CHOICES = (
    "fp32",
    "tf32",
    "amp_fp16",
    "amp_bf16",
    "amp_fp8",
    "bf16",
    "fp16",
    "int8",
    "fp8",
)


# One --mode/--optimizer for both estimators: "generate", adamw_8bit and sgd_momentum are for
# transformers (commands/fit_llm.py), momentum/rmsprop/adam for layer models; each path
# refuses the other's values with a line saying so.
MODE_CHOICES = ("train", "inference", "eval", "generate")
OPTIMIZER_CHOICES = ("sgd", "momentum", "rmsprop", "adam", "adamw", "adamw_8bit", "sgd_momentum")
LAYER_OPTIMIZERS = ("sgd", "momentum", "rmsprop", "adam", "adamw")
DEVICE_CHOICES = ("cuda", "cpu")
# Exit status when the models fit where they could be checked but an installed GPU that was
# asked about could not be read: the question was answered only in part.
EXIT_PARTIAL = 3


def register(sub: Any) -> None:
    p = sub.add_parser(
        "fit",
        help="will a model fit on a GPU: peak memory, largest batch, precision",
        description=(
            "Estimate the peak GPU memory of each model in MODELS (a models TOML of "
            "Keras-style layer lists or graphs and kind = \"transformer\" tables, or a Keras .json / "
            ".keras file, a Hugging Face config.json or model folder, or a GGUF file), the largest "
            "batch that fits and the precision to use. Default models file: ./gputui.toml, "
            "else the user config dir's models.toml, else the shipped examples. Exit 0 when "
            "every model fits, 1 when one does not, 2 on bad input, 3 when an installed GPU "
            "asked about could not be read (listed with its reason)."
        ),
    )
    add_arguments(p)
    p.set_defaults(run=run)


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The fit arguments (kept apart so another model source can add its own next to them)."""
    p.add_argument("models", nargs="?", type=Path, metavar="MODELS")
    where = p.add_mutually_exclusive_group()
    where.add_argument(
        "--gpu", metavar="NAME", help="check against a catalog card (e.g. 'RTX 3090')"
    )
    where.add_argument(
        "--index", type=int, metavar="N", help="only the installed GPU with NVML index N"
    )
    where.add_argument(
        "--all-cards", action="store_true", help="rank every catalog card for each model"
    )
    where.add_argument(
        "--prometheus", metavar="URL", help="rank the cluster's GPUs (free memory from Prometheus)"
    )
    p.add_argument("--match", metavar="SELECTOR", help="with --prometheus: only these series")
    p.add_argument("--batch-size", type=int, metavar="N", help="override each model's batch_size")
    p.add_argument("--precision", choices=PRECISION_CHOICES, help="only this precision")
    p.add_argument("--optimizer", choices=OPTIMIZER_CHOICES, help="override each model's optimizer")
    p.add_argument(
        "--mode",
        choices=MODE_CHOICES,
        help="override each model's mode: train, inference (a forward without labels), eval "
        "(the forward with labels and loss), generate (transformers)",
    )
    p.add_argument(
        "--memory-format",
        choices=MEMORY_FORMAT_CHOICES,
        help="override each layer model's memory_format: the tensor layout the speed assumes "
        "(channels_first = NCHW, PyTorch's default, also contiguous_format; channels_last = "
        "NHWC, model.to(memory_format=torch.channels_last): no layout transposes around "
        "tensor-core convolutions)",
    )
    p.add_argument(
        "--optimizer-impl",
        choices=OPTIMIZER_IMPLS,
        help="override each model's optimizer_impl: the optimizer kernels a training step's "
        "speed assumes (foreach, PyTorch's default; fused: fused=True or apex FusedAdam; "
        "loop: foreach=False)",
    )
    p.add_argument(
        "--device",
        choices=DEVICE_CHOICES,
        default="cuda",
        help="whose allocator behaviour to model: cuda (default) or cpu, to compare with a "
        "CPU measurement (calibration aid; no CUDA context or allocator slack)",
    )
    p.add_argument("--model", action="append", metavar="NAME", help="only this model (repeatable)")
    p.add_argument(
        "--input-shape",
        action="append",
        metavar="NAME=D,D",
        help="per-sample shape of a Keras model input Keras leaves variable (repeatable)",
    )
    p.add_argument(
        "--skip-unknown",
        action="store_true",
        help="treat unknown (custom) Keras layers as identity, with a warning",
    )
    p.add_argument("--layers", action="store_true", help="also print the per-layer table")
    p.add_argument("--json", action="store_true", help="print JSON (schema in docs/fit.md)")
    fit_llm.add_arguments(p)  # transformers / LLMs (docs/fit.md, second part)


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
    from gputui.fit.importers import detect_kind
    from gputui.fit.modelsfile import load_keras_model, load_models, shown

    kind = detect_kind(path)
    shapes = _input_shapes(args.input_shape)
    if kind in ("keras-json", "keras-archive"):
        return (load_keras_model(path, input_shapes=shapes, skip_unknown=args.skip_unknown),)
    if kind != "toml":
        raise UserError(f"{shown(path)}: a {kind} file is not a Keras model or a models TOML")
    if shapes or args.skip_unknown:
        raise UserError(
            "--input-shape and --skip-unknown apply to a Keras file; in a models TOML write "
            "input_shapes = { ... } and skip_unknown = true on the keras model's table"
        )
    return load_models(path)


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
    out = tuple(replace(m, **changes) for m in models) if changes else models
    return tuple(replace(m, software=_software(m.software, args)) for m in out)


def _software(sw: Any, args: argparse.Namespace) -> Any:
    """The model's `Software` with --memory-format / --optimizer-impl on top (the flag wins)."""
    from dataclasses import replace

    from gputui.fit.core.software import memory_format

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
    import json

    from gputui.core.errors import UserError
    from gputui.fit.modelsfile import shown
    from gputui.fit.paths import resolve_models_path
    from gputui.fit.report import SCHEMA_VERSION

    if fit_llm.handles(args):  # HF config/folder, --hf, GGUF: the transformer estimator
        return fit_llm.run(args)
    if args.batch_size is not None and not 1 <= args.batch_size <= 1 << 24:
        raise UserError(f"--batch-size: must be a positive integer, got {args.batch_size}")
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
    # kind = "transformer" tables: the LLM estimator (commands/fit_transformers.py)
    models, transformers = fit_transformers.split(models)
    fit_transformers.check_flags(args, transformers)
    models = _overridden(models, args)
    check_software_flags(args, models, transformers)
    if args.precision in ("int8", "fp8"):
        training = [m.name for m in models if m.mode == "train"]
        if training:
            raise UserError(
                f"--precision {args.precision}: inference only, but model {training[0]!r} "
                'has mode = "train"'
            )
    header: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "models_file": shown(path),
        "models_file_origin": origin,
        "backend": args.device,
    }
    # the cluster: fit/fleet.py
    if getattr(args, "prometheus", None) or getattr(args, "match", None):
        from gputui.commands.fit_fleet import run_fit

        fleet_llm = fit_transformers.fleet_entries(transformers, args, with_layers=bool(models))
        return run_fit(args, models, header, fleet_llm)
    if args.all_cards:
        return _all_cards(args, models, header, path, origin, transformers)
    targets, unavailable = _targets(args)
    from gputui.fit.check import check
    from gputui.fit.report import check_dict, json_safe, render_check

    results = [
        check(
            m,
            t,
            batch_size=args.batch_size,
            precision=args.precision or m.precision,
            backend=args.device,
            with_peak_tensors=True,
        )
        for t in targets
        for m in models
    ]
    llm = fit_transformers.estimates(transformers, targets, args, with_layers=bool(models))
    ok = all(_fits_now(r.estimate_for(r.recommended) or r.chosen) for r in results)
    ok = ok and fit_transformers.all_fit_now(llm)
    # 0: every model fits on every GPU asked about; 1: one does not; 3: it fits where it
    # could be checked, but a GPU asked about could not be read (lost, memory unreadable).
    code = 1 if not ok else (EXIT_PARTIAL if unavailable else 0)
    if args.json:
        payload = {
            **header,
            "gpus": [_target_json(t) for t in targets],
            "unavailable_gpus": [
                {"index": u.index, "name": u.name, "reason": u.reason} for u in unavailable
            ],
            "all_fit": ok and not unavailable,
            "models": [check_dict(r) for r in results],
            "transformers": fit_transformers.json_entries(llm),
            "mig_advice": _mig_advice_json(models, results),
        }
        print(json.dumps(json_safe(payload), indent=2, allow_nan=False))
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
        print(_target_line(t))
        for r in results:
            if r.target is t:
                print()
                print("\n".join(render_check(r, show_layers=args.layers)))
    from gputui.fit.core.mig import advice_lines

    for m in models:  # MIG GPUs where the model fits no instance now: what would hold it
        placed = [(r.target, r.chosen.peak_bytes) for r in results if r.model is m]
        for line in advice_lines(placed, prefix=f"{m.name}: "):
            print()
            print(line)
    if llm:
        print("\n".join(fit_transformers.text_lines(llm, [_target_line(t) for t in targets])))
    return code


def _mig_advice_json(models: tuple[Any, ...], results: list[Any]) -> dict[str, list[str]]:
    """Layer model name -> its MIG lines (fit.mig.advice_lines), for the models that have one."""
    from gputui.fit.core.mig import advice_lines

    out = {}
    for m in models:
        lines = advice_lines(
            [(r.target, r.chosen.peak_bytes) for r in results if r.model is m], prefix=""
        )
        if lines:
            out[m.name] = lines
    return out


def _fits_now(e: Any) -> bool:
    verdict = e.verdict_free if e.verdict_free is not None else e.verdict
    return bool(verdict != "does not fit")


def _target_json(t: Any) -> dict[str, Any]:
    from gputui.fit.report import target_dict

    return target_dict(t)


def _target_line(t: Any) -> str:
    from gputui.fit.report import gib

    arch = t.architecture.name if t.architecture else "unknown architecture"
    if t.index is None:
        return f"GPU: {t.name} (catalog card, {gib(t.memory_total)}, {arch})"
    card = f", catalog: {t.card.name}" if t.card and t.card.name != t.name else ""
    free = f"{gib(t.memory_free)} free of " if t.memory_free is not None else ""
    if t.mig is not None:  # a MIG instance: the job sees its memory, not the card's
        return (
            f"GPU {t.index} MIG {t.mig.label}: {t.mig.parent_name} ({free}{gib(t.memory_total)} "
            f"of this instance, {arch}; no speed estimate for a MIG slice)"
        )
    return f"GPU {t.index}: {t.name} ({free}{gib(t.memory_total)}, {arch}{card})"


def _targets(args: argparse.Namespace) -> tuple[list[Any], list[Any]]:
    """The fit targets, and the installed GPUs that cannot be one (with their reasons).

    Every installed GPU is accounted for: an unreadable or lost one is listed with its
    reason, never silently left out (the exit status then says the answer is partial).
    """
    from gputui.catalog import load_catalog
    from gputui.core.errors import UserError
    from gputui.fit.core.target import Target

    catalog = load_catalog()
    if args.gpu:
        card = catalog.find(args.gpu)
        arch = catalog.architectures.get(card.architecture)
        return [Target(card.name, card.memory_bytes, arch, card, card.compute_capability)], []
    from gputui.sources.base import open_source
    from gputui.sources.errors import SourceUnavailable

    try:
        source, _ = open_source("nvml", with_host=False)
    except SourceUnavailable as exc:
        raise UserError(
            f"no GPU to check against ({exc.reason}); pass --gpu NAME to use a catalog card, "
            "or --all-cards"
        ) from None
    try:
        snapshot = source.poll()
    finally:
        source.close()
    if args.index is not None and not any(d.index == args.index for d in snapshot.devices):
        have = ", ".join(str(d.index) for d in snapshot.devices) or "none"
        raise UserError(f"--index {args.index}: no such GPU (NVML indices: {have})")
    from gputui.fit.targets import targets_from_snapshot, unavailable_devices

    targets = targets_from_snapshot(snapshot, catalog, mig_instances=True)
    unavailable = unavailable_devices(snapshot)
    if args.index is not None:
        targets = [t for t in targets if t.index == args.index]
        unavailable = [u for u in unavailable if u.index == args.index]
    if not targets and not unavailable:
        raise UserError(
            "NVML reports no GPU; pass --gpu NAME to use a catalog card, or --all-cards"
        )
    return targets, unavailable


def _all_cards(
    args: argparse.Namespace,
    models: Any,
    header: dict[str, Any],
    path: Path,
    origin: str,
    transformers: tuple[Any, ...] = (),
) -> int:
    import json

    from gputui.catalog import load_catalog
    from gputui.core.errors import UserError
    from gputui.fit.graph.ranking import rank_cards
    from gputui.fit.modelsfile import shown
    from gputui.fit.report import json_safe, ranking_dict, render_ranking

    if args.device != "cuda":
        raise UserError("--all-cards ranks cards as CUDA runs them; use --device cpu with --gpu")
    catalog = load_catalog()
    rankings = [
        (
            m,
            rank_cards(
                m,
                catalog.cards,
                catalog.architectures,
                batch_size=args.batch_size,
                precision=args.precision or m.precision,
            ),
        )
        for m in models
    ]
    llm = fit_transformers.rankings(transformers, args, with_layers=bool(models))
    ok = all(any(r.estimate.fits for r in ranked) for _, ranked in rankings)
    ok = ok and all(any(r.estimate.fits for r in rs) for _, _, rs in llm)
    if args.json:
        payload = {
            **header,
            "all_fit": ok,
            "rankings": [ranking_dict(m, r) for m, r in rankings],
            "transformer_rankings": fit_transformers.ranking_json(llm),
        }
        print(json.dumps(json_safe(payload), indent=2, allow_nan=False))
        return 0 if ok else 1
    print(f"models: {shown(path)} ({origin})")
    for m, ranked in rankings:
        print()
        print("\n".join(render_ranking(m, ranked, args.batch_size or m.batch_size)))
    if llm:
        print("\n".join(fit_transformers.ranking_lines(llm)))
    return 0 if ok else 1
