"""The transformer flags' numbers, each within its documented bound (fit.transformer.bounds).

argparse gives integers of any size; a --seq-len of 10**30 must be one line
naming the flag and the bound, not a product that runs away later.
"""

from __future__ import annotations

import math
from typing import Any

from gputui.core.errors import UserError
from gputui.fit.transformer.bounds import bound_of

# argparse dest -> the quantity it is bounded as (fit.transformer.bounds.BOUNDS)
FLAG_QUANTITY = {
    "seq_len": "seq_len",
    "new_tokens": "new_tokens",
    "batch_size": "batch",
    "lora_rank": "lora_rank",
    "grad_accum": "grad_accum",
    "gpus": "gpus",
    "tp": "gpus",
    "pp": "gpus",
    "paged": "block",
    "prefill_chunk": "seq_len",
}


def check_flag_numbers(args: Any) -> None:
    """Each integer flag given: 1..its bound; --lora-alpha positive and finite."""
    for dest, quantity in FLAG_QUANTITY.items():
        value = getattr(args, dest, None)
        if value is None:
            continue
        flag = "--" + dest.replace("_", "-")
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise UserError(f"{flag}: must be an integer >= 1, got {value}")
        top = bound_of(quantity)
        if value > top:
            raise UserError(f"{flag}: {value} is over the bound {top}")
    alpha = getattr(args, "lora_alpha", None)
    if alpha is not None and not (math.isfinite(alpha) and alpha > 0):
        raise UserError(f"--lora-alpha: must be a positive finite number, got {alpha}")
