"""`gputui fit` for one transformer: a Hugging Face config.json or model folder, `--hf
ORG/NAME` from the local cache, or a GGUF file; train (full, LoRA, QLoRA), inference or
generate. `handles` says whether a parsed command line is for this module; `run` prints
text or JSON (gputui.fit.report.document, the shape every kind shares).
Exit 0 when it fits (in the memory free now, for an installed GPU), 1 when not, 2 on bad
input, 3 when a GPU asked about could not be read.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from gputui.commands.fit.args import EXIT_PARTIAL
from gputui.commands.fit.gpus import precision_for, targets


def workload(args: argparse.Namespace, model: Any, precision_default: str) -> Any:
    """The workload the flags ask for `model` (gputui.fit's one validator)."""
    from gputui.fit import WorkloadAsk, build_workload

    return build_workload(WorkloadAsk.of(args), model, precision_default)


def auto_parallel(args: argparse.Namespace) -> bool:
    from gputui.fit import WorkloadAsk
    from gputui.fit import auto_parallel as auto

    return bool(auto(WorkloadAsk.of(args)))


def detect(path: Path) -> str | None:
    """What a `fit` input is, by content: a transformer kind, or None (anything else)."""
    from gputui.core.errors import UserError
    from gputui.fit import TRANSFORMER_KINDS, detect_kind

    try:
        kind = detect_kind(path)
    except UserError:  # unreadable: the models loader reports it in its own words
        return None
    return kind if kind in TRANSFORMER_KINDS else None


def handles(args: argparse.Namespace) -> bool:
    if getattr(args, "hf", None):
        return True
    path = getattr(args, "models", None)
    return path is not None and detect(Path(path)) is not None


def load_model(args: argparse.Namespace) -> Any:
    """The transformer the file (or --hf ORG/NAME) holds, read by the importer registry."""
    from gputui.core.errors import UserError
    from gputui.fit import TransformerSpec, load_any, load_hf_cached

    if args.hf:
        if args.models is not None:
            raise UserError("--hf: give either a file or --hf ORG/NAME, not both")
        return load_hf_cached(args.hf)
    (spec,) = load_any(Path(args.models))
    assert isinstance(spec, TransformerSpec)  # handles() saw a transformer kind
    return spec.model


def _header(args: argparse.Namespace, mode: str) -> dict[str, Any]:
    from gputui.fit import shown
    from gputui.fit.report.document import header

    if args.models is None:  # --hf: the local Hugging Face cache, no file named
        return header(None, "hf cache", args.device, mode)
    return header(shown(Path(args.models)), "given", args.device, mode)


def run(args: argparse.Namespace) -> int:
    from gputui.core.errors import UserError
    from gputui.fit import FitRequest, TransformerSpec, check
    from gputui.fit.report import document as doc

    if getattr(args, "layers", False):
        raise UserError("--layers: the per-layer table is for layer-list models, not transformers")
    if getattr(args, "runtime", None):
        raise UserError(
            "--runtime: the runtime of a layer model (a models TOML's layer tables, a Keras "
            "file); a transformer is estimated as Hugging Face transformers runs it"
        )
    if getattr(args, "model", None):
        raise UserError(
            "--model: picks a model of a models TOML; a transformer file holds one model"
        )
    model = load_model(args)
    allow = bool(getattr(args, "allow_longer_context", False))
    if (
        getattr(args, "prometheus", None) is not None or getattr(args, "match", None) is not None
    ):  # the fleet
        from gputui.commands.fit.fleet import run_fit

        return run_fit(args, _header(args, "fleet"), (config_fleet_entry(args, model),))
    if args.all_cards:
        from gputui.catalog import load_catalog
        from gputui.commands.fit.args import batch_source, budget_usd
        from gputui.fit import over_budget
        from gputui.fit.report.ranking_text import batch_note, render_ranking
        from gputui.fit.report.transformer_text import seq_word, workload_title

        catalog = load_catalog()
        wl = workload(args, model, "amp_bf16")
        pick = None
        if auto_parallel(args):
            from gputui.fit import choose_parallel

            built: dict[Any, Any] = {}
            pick = lambda w, t: choose_parallel(model, w, [t], built)[0]  # noqa: E731
        spec = TransformerSpec(model.name, model, wl)
        budget = budget_usd(args)
        request = FitRequest(spec, catalog=catalog, pick=pick, budget_usd=budget)
        ranked = list(check(request).ranked)
        ok = any(r.estimate.fits for r in ranked)
        if args.json:
            entry = doc.transformer_entry(model.name, model, wl, ranked=ranked)
            print(doc.dumps(doc.document(_header(args, "all-cards"), [entry], all_fit=ok)))
        else:
            per_card = any(r.estimate.workload.parallel != wl.parallel for r in ranked)
            note = batch_note(wl.batch_size, batch_source(args, "the workload's batch_size"))
            left_out = (budget, over_budget(catalog.cards, budget)) if budget is not None else None
            title = workload_title(model, wl, per_card)
            lines = render_ranking(title, ranked, seq_word(wl), batch=note, budget=left_out)
            print("\n".join(lines))
        return 0 if ok else 1
    from gputui.fit import advice_lines
    from gputui.fit.report.targets import target_line
    from gputui.fit.report.transformer_text import render

    gpus, unavailable = targets(args)
    lost_lines = [
        f"GPU {u.index}: {u.name}: unavailable, not checked: {u.reason}" for u in unavailable
    ]
    if not gpus:  # every GPU asked about is lost or unreadable
        if args.json:
            entry = doc.transformer_entry(model.name, model, None, estimates=[])
            page = doc.document(
                _header(args, "check"), [entry], all_fit=False, unavailable=unavailable
            )
            print(doc.dumps(page))
        else:
            print("\n".join(lost_lines))
        return EXIT_PARTIAL
    from gputui.core.textsafe import visible
    from gputui.fit import asked_parallel, choose_parallel, hint_lines

    wl = workload(args, model, precision_for(gpus[0], args.mode or ""))
    wl, choice = (
        choose_parallel(model, wl, gpus) if auto_parallel(args) else (wl, asked_parallel(wl))
    )
    request = FitRequest(
        TransformerSpec(model.name, model, wl), tuple(gpus), allow_longer_context=allow
    )
    results = [c.estimate for c in check(request).checks]
    ok = all(e.fits_now for e in results)
    advice = [(e.target, e.peak_bytes) for e in results]
    if args.json:
        entry = doc.transformer_entry(
            model.name,
            model,
            wl,
            estimates=results,
            parallel_choice=choice.as_dict(),
            mig_advice=advice_lines(advice, prefix=""),
        )
        page = doc.document(
            _header(args, "check"),
            [entry],
            all_fit=ok and not unavailable,
            targets=gpus,
            unavailable=unavailable,
        )
        print(doc.dumps(page))
    else:
        lines = render(model, wl, results, [target_line(t) for t in gpus])
        why = choice.line()
        print("\n".join(lines[:2] + ([visible(why)] if why else []) + lines[2:]))
        for line in advice_lines(advice):
            print(line)
        if lost_lines:
            print("\n" + "\n".join(lost_lines))
        for line in hint_lines(model, wl, results[0]):
            print(visible(line))
    return 1 if not ok else (EXIT_PARTIAL if unavailable else 0)


def config_fleet_entry(args: argparse.Namespace, model: Any) -> Any:
    """--prometheus for one HF config / folder / GGUF: the fleet's model (fit.fleet.FleetModel)
    with the workload the local check would use on each GPU; a bad flag is refused here."""
    from gputui.fit import FitRequest, TransformerSpec
    from gputui.fit.fleet import FleetModel

    asked = workload(args, model, "amp_bf16")
    made: dict[str, Any] = {}

    def workload_for(target: Any) -> Any:
        default = precision_for(target, args.mode or "")
        if default not in made:
            made[default] = workload(args, model, default)
        return made[default]

    request = FitRequest(TransformerSpec(model.name, model, asked))
    return FleetModel(model.name, request, workload_for)
