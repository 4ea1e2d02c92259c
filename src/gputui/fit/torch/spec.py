"""What to trace: the user's factory, inputs, loss and workload, as plain data.

The CLI flags and a models-TOML `kind = "torch"` table both build one; nothing here
imports torch, so a models file that names a torch model loads without it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from gputui.core.errors import UserError

Mode = Literal["train", "inference", "eval"]
MODES: tuple[Mode, ...] = ("train", "inference", "eval")
OPTIMIZERS = ("sgd", "momentum", "rmsprop", "adam", "adamw")
# the dtypes --input-shape accepts, by the names torch gives them
DTYPES = (
    "float32",
    "float16",
    "bfloat16",
    "float64",
    "int64",
    "int32",
    "int16",
    "int8",
    "uint8",
    "bool",
)
_DTYPE_ALIASES = {"float": "float32", "long": "int64", "int": "int32", "half": "float16"}
# a dimension list: 3,224,224 (a scalar sample: an empty list is refused, say "1")
_SHAPE = re.compile(r"^\d+(,\d+)*$")
MAX_DIM = 1 << 24
INSTALL_HINT = "PyTorch is not installed: pip install 'gputui[torch]'"


@dataclass(frozen=True, slots=True)
class InputShape:
    """One input of every sample: its shape without the batch, and its dtype."""

    shape: tuple[int, ...]
    dtype: str = "float32"


@dataclass(frozen=True, slots=True)
class TorchSpec:
    """A PyTorch model to trace: `factory` is FILE.py:NAME or package.module:NAME."""

    name: str
    factory: str
    input_shapes: tuple[InputShape, ...] = ()
    inputs: str | None = None  # FILE.py:NAME called with the batch size
    loss: str | None = None  # FILE.py:NAME called with (output, batch size)
    mode: Mode = "train"
    optimizer: str = "adam"
    batch_size: int = 32
    precision: str | None = None
    base_dir: str | None = None  # a relative FILE.py is read from here (the TOML's folder)


def parse_input_shape(text: str, where: str = "--input-shape") -> InputShape:
    """'3,224,224' or '128:int64' -> InputShape; a one-line UserError on anything else."""
    shape_text, _, dtype = text.strip().partition(":")
    dtype = _DTYPE_ALIASES.get(dtype.strip(), dtype.strip()) or "float32"
    shape_text = shape_text.replace(" ", "").strip("()[]")
    if not _SHAPE.match(shape_text):
        raise UserError(
            f"{where}: {text[:60]!r} is not a shape: write the dimensions of one sample "
            "without the batch, e.g. 3,224,224 or 128:int64"
        )
    dims = tuple(int(d) for d in shape_text.split(","))
    if any(d < 1 or d > MAX_DIM for d in dims):
        raise UserError(f"{where}: {text[:60]!r}: each dimension must be 1..{MAX_DIM}")
    if dtype not in DTYPES:
        raise UserError(f"{where}: dtype {dtype[:30]!r} is not one of {', '.join(DTYPES)}")
    return InputShape(dims, dtype)


def check_reference(text: str, where: str) -> str:
    """A FILE.py:NAME or package.module:NAME reference, checked for its form only."""
    path, sep, name = text.rpartition(":")
    if not sep or not path or not name.isidentifier():
        raise UserError(
            f"{where}: {text[:80]!r} must be FILE.py:CALLABLE or package.module:CALLABLE"
        )
    return text
