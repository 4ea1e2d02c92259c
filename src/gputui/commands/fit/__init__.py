"""`gputui fit`: will each model fit on a GPU, at what batch size, in which precision.

One command for every model kind. The modules depend one way:
args (the flags) <- gpus (which GPUs) <- transformer_tables (a models file's
transformers) <- models_file (a models TOML or Keras file) and transformer_file (an HF
config / folder / safetensors / GGUF); this package's `run` picks one of the last two.
Files are read by gputui.fit's `load_any`, workloads built by its `build_workload`
(flags -> a Workload), estimates made by its `check`; output is gputui.fit.report's,
one JSON shape for all.
"""

from __future__ import annotations

import argparse
from typing import Any

from gputui.commands.fit.args import add_arguments, budget_usd


def register(sub: Any) -> None:
    p = sub.add_parser(
        "fit",
        help="will a model fit on a GPU: peak memory, largest batch, precision",
        description=(
            "Estimate the peak GPU memory of each model in MODELS (a models TOML of "
            'Keras-style layer lists or graphs and kind = "transformer" tables, or a Keras .json / '
            ".keras file, a Hugging Face config.json or model folder, or a GGUF file), the largest "
            "batch that fits and the precision to use. Default models file: ./gputui.toml, "
            "else the user config dir's models.toml, else the shipped examples. Exit 0 when "
            "every model fits, 1 when one does not, 2 on bad input, 3 when an installed GPU "
            "asked about could not be read (listed with its reason)."
        ),
    )
    add_arguments(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from gputui.commands.fit import models_file, transformer_file
    from gputui.core.errors import UserError

    if getattr(args, "all", False) and getattr(args, "prometheus", None) is None:
        raise UserError("--all: only with --prometheus URL (it lists every GPU of the fleet)")
    if args.against is not None or args.pid is not None:  # predicted vs actual
        from gputui.commands.fit import against

        return against.run(args)
    if args.models is not None:  # a name the OS refuses is one line before any importer looks
        from gputui.core.inputfile import check_path_name

        check_path_name(args.models, "MODELS")
    if getattr(args, "deadline", None) is not None and getattr(args, "prometheus", None) is None:
        raise UserError("--deadline: only with --prometheus URL")
    budget_usd(args)  # a bad --budget is one line before any model is read
    if transformer_file.handles(args):  # HF config/folder, --hf, GGUF: the transformer estimator
        return transformer_file.run(args)
    return models_file.run(args)
