"""A models-TOML `kind = "torch"` table: a PyTorch module to trace, with the CLI's keys.

    [[model]]
    name = "resnet50"
    kind = "torch"
    torch = "resnet.py:build"          # FILE.py:NAME (relative to this file) or module:NAME
    input_shape = ["3,224,224"]        # or inputs = "resnet.py:inputs"
    loss = "resnet.py:loss"            # optional
    mode = "train"                     # train | inference | eval
    optimizer = "adam"
    batch_size = 32
    precision = "amp_bf16"             # optional

Only checked here; nothing is imported or run until the model is estimated (the
engine's entry turns the TorchSpec into a traced model then), so a models file with
a torch table loads without torch.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gputui.core.errors import UserError
from gputui.core.textsafe import visible
from gputui.fit.core.precision_names import PRECISIONS
from gputui.fit.torch.spec import MODES, OPTIMIZERS, TorchSpec, check_reference, parse_input_shape

KEYS = {"name", "kind", "torch", "inputs", "input_shape", "loss", "mode", "optimizer",
        "batch_size", "precision"}  # fmt: skip
MAX_BATCH = 1 << 24


def torch_spec(raw: dict[str, Any], ctx: str, base: Path) -> TorchSpec:
    """The table as a TorchSpec; a one-line UserError naming the model and key."""
    name = raw.get("name")
    if not isinstance(name, str) or not name.strip():
        raise UserError(f"{ctx}: name: must be a non-empty string")
    ctx = f"{ctx.rsplit(': model[', 1)[0]}: model {visible(name)!r}"
    unknown = sorted(set(raw) - KEYS)
    if unknown:
        raise UserError(
            f"{ctx}: unknown key {unknown[0]!r} (a torch model takes {', '.join(sorted(KEYS))})"
        )
    factory = _text(raw, "torch", ctx, required=True)
    assert factory is not None
    shapes = raw.get("input_shape", [])
    if isinstance(shapes, str):
        shapes = [shapes]
    if not isinstance(shapes, list) or not all(isinstance(s, str) for s in shapes):
        raise UserError(f'{ctx}: input_shape: must be a list of strings like "3,224,224"')
    mode = raw.get("mode", "train")
    if mode not in MODES:
        raise UserError(
            f"{ctx}: mode: must be one of {', '.join(MODES)}, got {visible(str(mode))!r}"
        )
    optimizer = raw.get("optimizer", "adam")
    if optimizer not in OPTIMIZERS:
        raise UserError(f"{ctx}: optimizer: must be one of {', '.join(OPTIMIZERS)}")
    batch = raw.get("batch_size", 32)
    if not isinstance(batch, int) or isinstance(batch, bool) or not 1 <= batch <= MAX_BATCH:
        raise UserError(f"{ctx}: batch_size: must be an integer 1..{MAX_BATCH}")
    precision = raw.get("precision")
    if precision is not None and (
        precision not in PRECISIONS or precision in ("int8", "fp8", "amp_fp8")
    ):
        raise UserError(
            f"{ctx}: precision: a torch model is traced in fp32, tf32, amp_fp16, amp_bf16, bf16 or fp16"
        )
    return TorchSpec(
        name=name,
        factory=check_reference(factory, f"{ctx}: torch"),
        input_shapes=tuple(parse_input_shape(s, f"{ctx}: input_shape") for s in shapes),
        inputs=_ref(raw, "inputs", ctx),
        loss=_ref(raw, "loss", ctx),
        mode=mode,
        optimizer=optimizer,
        batch_size=batch,
        precision=precision,
        base_dir=str(base),
    )


def _text(raw: dict[str, Any], key: str, ctx: str, required: bool = False) -> str | None:
    value = raw.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value.strip():
        raise UserError(f"{ctx}: {key}: must be FILE.py:NAME or package.module:NAME")
    return value


def _ref(raw: dict[str, Any], key: str, ctx: str) -> str | None:
    value = _text(raw, key, ctx)
    return check_reference(value, f"{ctx}: {key}") if value is not None else None
