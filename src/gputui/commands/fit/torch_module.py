"""`gputui fit --torch FILE.py:FACTORY`: the user's PyTorch module, traced on fake tensors.

The flags become a TorchSpec (gputui.fit's), the spec a traced model, and the model is
checked, ranked and printed by models_file's code, as a layer model is: the same
check, ranking rows, text and JSON.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from gputui.commands.fit.args import LAYER_OPTIMIZERS

# flags that mean nothing for a traced module: refused, never ignored
_NOT_FOR_TORCH = ("memory_format", "skip_unknown", "model", "prometheus")


def handles(args: argparse.Namespace) -> bool:
    return getattr(args, "torch", None) is not None or any(
        getattr(args, k, None) is not None for k in ("inputs", "loss")
    )


def model(args: argparse.Namespace) -> tuple[Any, Path]:
    """The traced model the flags describe, and the factory's file (for the header)."""
    from gputui.core.errors import UserError
    from gputui.fit import TorchSpec, parse_input_shape, traced_model
    from gputui.fit.torch.spec import check_reference

    if args.torch is None:
        raise UserError("--inputs/--loss: only with --torch FILE.py:FACTORY")
    if args.models is not None:
        raise UserError("--torch: give the model file as --torch FILE.py:FACTORY, not MODELS too")
    for flag in _NOT_FOR_TORCH:
        if getattr(args, flag, None):
            raise UserError(f"--{flag.replace('_', '-')}: does not apply to --torch")
    if args.mode is not None and args.mode not in ("train", "inference", "eval"):
        raise UserError(f"--mode {args.mode}: --torch takes train, inference or eval")
    if args.optimizer is not None and args.optimizer not in LAYER_OPTIMIZERS:
        raise UserError(
            f"--optimizer {args.optimizer}: --torch takes {', '.join(LAYER_OPTIMIZERS)}"
        )
    if args.precision in ("int8", "fp8", "amp_fp8"):
        raise UserError(
            f"--precision {args.precision}: a PyTorch module is traced in fp32, tf32, amp_fp16, "
            "amp_bf16, bf16 or fp16"
        )
    factory = check_reference(args.torch, "--torch")
    spec = TorchSpec(
        name=factory.rpartition(":")[2],
        factory=factory,
        input_shapes=tuple(parse_input_shape(s) for s in args.input_shape or ()),
        inputs=check_reference(args.inputs, "--inputs") if args.inputs else None,
        loss=check_reference(args.loss, "--loss") if args.loss else None,
        mode=args.mode or "train",
        optimizer=args.optimizer or "adam",
        batch_size=args.batch_size or 32,
        precision=args.precision,
    )
    return traced_model(spec, args.device), Path(factory.rpartition(":")[0])
