"""Reading one layer's keyword arguments the way Keras would, with Keras' defaults.

Every problem is raised as LayerArgError(field, reason); the caller adds the
file, model and layer position so the user gets one line that points at it.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any

# Arguments that change numerics or training behaviour but not shapes, parameter
# counts or memory; accepted so that a transcribed Keras call needs no editing.
COSMETIC = frozenset(
    {
        "name",
        "dtype",
        "kernel_initializer",
        "bias_initializer",
        "kernel_regularizer",
        "bias_regularizer",
        "activity_regularizer",
        "kernel_constraint",
        "bias_constraint",
        "seed",
    }
)
# Keras 2 let any first layer declare the model input; the loader reads these.
INPUT_ARGS = frozenset({"input_shape", "batch_input_shape", "batch_size", "input_dim"})
# Arguments the graph syntax adds to a layer table (not Keras arguments).
GRAPH_ARGS = frozenset({"inputs", "loss", "attention"})
# Bounds on what a models file may ask for: beyond them the numbers stop meaning
# anything (and floats overflow), so they are refused with a message at parse time.
MAX_DIM = 2**31 - 1  # one dimension
MAX_ELEMENTS = 2**40  # elements of one tensor per sample
MAX_PARAMS = 2**40  # parameters of one layer


class LayerArgError(ValueError):
    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason


class Args:
    """Typed access to a layer's arguments; unknown names are rejected up front."""

    def __init__(
        self, raw: Mapping[str, Any], known: frozenset[str] | set[str], extra_ok: frozenset[str]
    ) -> None:
        allowed = set(known) | COSMETIC | INPUT_ARGS | GRAPH_ARGS | extra_ok | {"type", "trainable"}
        for key in raw:
            if key not in allowed:
                choices = ", ".join(sorted(set(known)))
                raise LayerArgError(key, f"unknown argument (this layer takes: {choices})")
        self.raw = raw
        for key in raw:
            if key in COSMETIC or key == "initializer" or key.endswith(_COSMETIC_SUFFIXES):
                _cosmetic(key, raw[key])
        self.flag("trainable", True)

    def has(self, name: str) -> bool:
        return name in self.raw and self.raw[name] is not None

    def get(self, name: str, default: Any = None) -> Any:
        value = self.raw.get(name, default)
        return default if value is None else value

    def integer(self, name: str, default: int | None = None, minimum: int = 1) -> int:
        value = self.raw.get(name, default)
        if value is None:
            raise LayerArgError(name, "is required")
        if isinstance(value, bool) or not isinstance(value, int):
            raise LayerArgError(name, f"must be an integer, got {value!r}")
        if value < minimum:
            raise LayerArgError(name, f"must be >= {minimum}, got {value}")
        if value > MAX_DIM:
            raise LayerArgError(name, f"must be at most {MAX_DIM}, got {value}")
        return value

    def number(self, name: str, default: float, low: float, high: float) -> float:
        value = self.raw.get(name, default)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise LayerArgError(name, f"must be a number, got {value!r}")
        if isinstance(value, int) and abs(value) > sys.float_info.max:  # JSON has no int limit
            raise LayerArgError(
                name, f"must be in [{low:g}, {high:g}), got an integer too large for a float"
            )
        if not low <= float(value) < high:
            raise LayerArgError(name, f"must be in [{low:g}, {high:g}), got {value}")
        return float(value)

    def flag(self, name: str, default: bool) -> bool:
        value = self.raw.get(name, default)
        if not isinstance(value, bool):
            raise LayerArgError(name, f"must be true or false, got {value!r}")
        return value

    def choice(self, name: str, default: str, choices: tuple[str, ...]) -> str:
        value = self.raw.get(name, default)
        if not isinstance(value, str) or value.lower() not in choices:
            raise LayerArgError(name, f"must be one of {', '.join(choices)}, got {value!r}")
        return value.lower()

    def ints(self, name: str, default: Any, rank: int, minimum: int = 1) -> tuple[int, ...]:
        """An int or a list of `rank` ints, as Keras accepts for kernel_size, strides, ..."""
        value = self.raw.get(name, default)
        if value is None:
            raise LayerArgError(name, "is required")
        items = [value] * rank if isinstance(value, int) and not isinstance(value, bool) else value
        if not isinstance(items, (list, tuple)) or len(items) != rank:
            raise LayerArgError(name, f"must be an integer or a list of {rank}, got {value!r}")
        out = []
        for item in items:
            if isinstance(item, bool) or not isinstance(item, int) or item < minimum:
                raise LayerArgError(name, f"must hold integers >= {minimum}, got {value!r}")
            if item > MAX_DIM:
                raise LayerArgError(name, f"must hold integers at most {MAX_DIM}, got {item}")
            out.append(item)
        return tuple(out)

    def data_format(self) -> None:
        fmt = self.raw.get("data_format", "channels_last")
        if fmt is not None and fmt != "channels_last":
            raise LayerArgError(
                "data_format", f"only channels_last (Keras' default) is supported, got {fmt!r}"
            )


_COSMETIC_SUFFIXES = ("_initializer", "_regularizer", "_constraint")


def _cosmetic(key: str, value: Any) -> None:
    """Arguments that change no shape or memory still have to be well formed."""
    if key == "name" and not isinstance(value, str):
        raise LayerArgError(key, f"must be a string, got {value!r}")
    if (
        key == "seed"
        and value is not None
        and (isinstance(value, bool) or not isinstance(value, int))
    ):
        raise LayerArgError(key, f"must be an integer, got {value!r}")
    named = key in ("dtype", "initializer") or key.endswith(_COSMETIC_SUFFIXES)
    # a Keras name ("glorot_uniform", "float32") or its serialised config table
    if named and value is not None and not isinstance(value, (str, dict)):
        raise LayerArgError(key, f"must be a name or a config table, got {value!r}")
