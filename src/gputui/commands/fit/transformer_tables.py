"""`gputui fit MODELS.toml` for the file's `kind = "transformer"` tables.

Each table carries its own workload (mode, method, seq_len, ...); the command
line's transformer flags override it exactly as they do for a single HF config:
the table's keys fill the flags left unset (`replace()` on a WorkloadAsk), and one
validator (gputui.fit's `build_workload`) turns the result into a Workload. Layer models and
transformers of one file are checked side by side and share the exit status.
"""

from __future__ import annotations

import argparse
from typing import Any

from gputui.commands.fit.args import LLM_ONLY_FLAGS, OPTIMIZERS
from gputui.commands.fit.gpus import precision_for
from gputui.fit import WorkloadAsk, build_workload

# table key -> the `fit` flag (argparse dest) that overrides it
_FLAG_OF = {
    "batch_size": "batch_size",
    "seq_len": "seq_len",
    "new_tokens": "new_tokens",
    "method": "method",
    "precision": "precision",
    "weights": "weights",
    "optimizer": "optimizer",
    "lora_rank": "lora_rank",
    "lora_alpha": "lora_alpha",
    "lora_targets": "lora_targets",
    "grad_checkpointing": "grad_checkpointing",
    "grad_accum": "grad_accum",
    "attention": "attention",
    "kv_dtype": "kv_dtype",
    "paged_block": "paged",
    "optimizer_impl": "optimizer_impl",
    "loop": "loop",
    "engine": "engine",
}
_TRAIN_ONLY = {"method", "precision", "optimizer", "lora_rank", "lora_alpha", "lora_targets",
               "grad_checkpointing", "grad_accum", "optimizer_impl", "loop"}  # fmt: skip
_GENERATE_ONLY = {"new_tokens", "kv_dtype", "paged_block", "engine"}
_TRAIN_PRECISIONS = ("fp32", "amp_bf16", "amp_fp16", "bf16", "fp16")


def split(models: tuple[Any, ...]) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    """(layer models, transformers) of a loaded models file."""
    from gputui.fit import TransformerSpec

    tfm = tuple(m for m in models if isinstance(m, TransformerSpec))
    return tuple(m for m in models if not isinstance(m, TransformerSpec)), tfm


def check_flags(args: argparse.Namespace, transformers: tuple[Any, ...]) -> None:
    """Transformer-only flags need a transformer among the models chosen."""
    from gputui.core.errors import UserError

    if transformers:
        return
    given = [f for f in LLM_ONLY_FLAGS if getattr(args, f, None) not in (None, False)]
    if given:
        raise UserError(
            f"--{given[0].replace('_', '-')}: applies to transformer models (a Hugging Face "
            'config.json or model folder, a GGUF file, --hf ORG/NAME, or a kind = "transformer" '
            "table), and none of the models chosen is one"
        )


def workload(
    spec: Any, args: argparse.Namespace, precision_default: str, with_layers: bool = False
) -> Any:
    """The table's workload with the command line's flags on top, validated as one.

    `with_layers`: layer models are checked too, so --optimizer and --precision may be
    meant for them; a value a transformer cannot take then leaves the transformer alone.
    """
    from dataclasses import replace

    ask = WorkloadAsk.of(args)
    # the table's `allow_longer_context = true` or the flag: either one asks for it
    mode = args.mode or spec.workload.mode
    changes: dict[str, Any] = {
        "allow_longer_context": ask.allow_longer_context or bool(spec.allow_longer_context),
        "mode": mode,
        # --memory-format is for the layer models beside it (check_software_flags made sure
        # one is); --optimizer-impl is for whichever models train
        "memory_format": None,
    }
    shared_optimizer = ask.optimizer is not None
    if with_layers and shared_optimizer and (mode != "train" or ask.optimizer not in OPTIMIZERS):
        changes["optimizer"] = None
    if with_layers and mode == "train" and ask.precision not in (None, *_TRAIN_PRECISIONS):
        changes["precision"] = None
    if with_layers and mode != "train":
        changes["optimizer_impl"] = None
    ask = replace(ask, **changes)
    wl = spec.workload
    for key in spec.given:
        flag = _FLAG_OF.get(key)
        if flag is None or getattr(ask, flag, None) not in (None, False):
            continue  # the flag was given: it wins
        if key in _TRAIN_ONLY and mode != "train":
            continue
        if key in _GENERATE_ONLY and mode != "generate":
            continue
        if key == "weights" and mode == "train" and (args.method or wl.method) == "full":
            continue
        value = {
            "lora_targets": ",".join(wl.lora_targets),
            "paged_block": wl.paged_block,
            "precision": wl.precision,
        }.get(key, getattr(wl, key))
        ask = replace(ask, **{flag: value})
    return build_workload(ask, spec.model, precision_default)


def estimates(
    transformers: tuple[Any, ...],
    targets: list[Any],
    args: argparse.Namespace,
    with_layers: bool = False,
) -> list[tuple[Any, Any, list[Any]]]:
    """(spec, workload, one estimate per target) for each transformer."""
    from dataclasses import replace

    from gputui.fit import FitRequest, check

    out = []
    for spec in transformers:
        mode = args.mode or spec.workload.mode
        default = precision_for(targets[0], mode) if targets else "amp_bf16"
        wl = workload(spec, args, default, with_layers)
        allow = bool(getattr(args, "allow_longer_context", False)) or spec.allow_longer_context
        request = FitRequest(replace(spec, workload=wl), tuple(targets), allow_longer_context=allow)
        out.append((spec, wl, [c.estimate for c in check(request).checks]))
    return out


def all_fit_now(results: list[tuple[Any, Any, list[Any]]]) -> bool:
    return all(e.fits_now for _, _, ests in results for e in ests)


def json_entries(results: list[tuple[Any, Any, list[Any]]]) -> list[dict[str, Any]]:
    from gputui.fit import advice_lines
    from gputui.fit.report.document import transformer_entry

    return [
        transformer_entry(
            spec.name,
            spec.model,
            wl,
            estimates=ests,
            mig_advice=advice_lines([(e.target, e.peak_bytes) for e in ests], prefix=""),
        )
        for spec, wl, ests in results
    ]


def text_lines(results: list[tuple[Any, Any, list[Any]]], target_lines: list[str]) -> list[str]:
    from gputui.fit import advice_lines
    from gputui.fit.report.transformer_text import render

    lines: list[str] = []
    for spec, wl, ests in results:
        lines += ["", *render(spec.model, wl, ests, target_lines)]
        lines += advice_lines([(e.target, e.peak_bytes) for e in ests])
    return lines


def rankings(
    transformers: tuple[Any, ...], args: argparse.Namespace, with_layers: bool = False
) -> list[tuple[Any, Any, list[Any]]]:
    """--all-cards: every catalog card for each transformer, with the cards it would need."""
    from dataclasses import replace

    from gputui.catalog import load_catalog
    from gputui.commands.fit.args import budget_usd
    from gputui.fit import FitRequest, check

    catalog = load_catalog()
    out = []
    for spec in transformers:
        wl = workload(spec, args, "amp_bf16", with_layers)
        request = FitRequest(
            replace(spec, workload=wl), catalog=catalog, budget_usd=budget_usd(args)
        )
        answer = check(request)
        out.append((spec, wl, list(answer.ranked)))
    return out


def ranking_json(ranked: list[tuple[Any, Any, list[Any]]]) -> list[dict[str, Any]]:
    from gputui.fit.report.document import transformer_entry

    return [transformer_entry(spec.name, spec.model, wl, ranked=rs) for spec, wl, rs in ranked]


def ranking_lines(ranked: list[tuple[Any, Any, list[Any]]], args: argparse.Namespace) -> list[str]:
    from gputui.catalog import load_catalog
    from gputui.commands.fit.args import batch_source, budget_usd
    from gputui.fit import over_budget
    from gputui.fit.report.ranking_text import batch_note, render_ranking
    from gputui.fit.report.transformer_text import seq_word, workload_title

    budget = budget_usd(args)
    left_out = (budget, over_budget(load_catalog().cards, budget)) if budget is not None else None
    lines: list[str] = []
    for spec, wl, rs in ranked:
        note = batch_note(wl.batch_size, batch_source(args, "the table's batch_size"))
        title = workload_title(spec.model, wl)
        lines += ["", *render_ranking(title, rs, seq_word(wl), batch=note, budget=left_out)]
    return lines


def fleet_entries(
    transformers: tuple[Any, ...], args: argparse.Namespace, with_layers: bool = False
) -> tuple[Any, ...]:
    """--prometheus: the fleet's model (fit.fleet.FleetModel) per transformer, its workload
    built as the local check builds it (its default precision follows the target's
    architecture).

    Each workload is validated once here, so a bad flag is refused before any query."""
    from gputui.fit import FitRequest, TransformerSpec
    from gputui.fit.fleet import FleetModel

    out = []
    for spec in transformers:
        asked = workload(spec, args, "amp_bf16", with_layers)
        request = FitRequest(TransformerSpec(spec.model.name, spec.model, asked))
        out.append(FleetModel(spec.name, request, _workload_for(spec, args, with_layers)))
    return tuple(out)


def _workload_for(spec: Any, args: argparse.Namespace, with_layers: bool) -> Any:
    mode = args.mode or spec.workload.mode
    made: dict[str, Any] = {}

    def workload_for(target: Any) -> Any:
        default = precision_for(target, mode)
        if default not in made:
            made[default] = workload(spec, args, default, with_layers)
        return made[default]

    return workload_for
