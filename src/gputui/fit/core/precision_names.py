"""The precision names alone, import-free: the library's policies (fit.core.precision)
and `gputui fit`'s --precision choices (commands/fit/args.py) read the one list."""

from __future__ import annotations

from typing import Literal, get_args

PrecisionName = Literal[
    "fp32", "tf32", "amp_fp16", "amp_bf16", "amp_fp8", "bf16", "fp16", "int8", "fp8"
]
PRECISIONS: tuple[PrecisionName, ...] = get_args(PrecisionName)
