"""The models file: TOML whose layer lists read like the Keras code they came from.

Parsing stops at the first problem with one line naming the file, the model,
the layer (as `layers[i] (Type)`) and the field: the CLI prints it and exits 2.
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from gputui.errors import UserError
from gputui.fit.args import LayerArgError
from gputui.fit.layers import LAYERS, analyse_layer
from gputui.fit.stats import LayerStats

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib  # type: ignore[import-not-found, no-redef, unused-ignore]

Optimizer = Literal["sgd", "momentum", "rmsprop", "adam", "adamw"]
Mode = Literal["train", "inference"]
OPTIMIZERS: tuple[Optimizer, ...] = ("sgd", "momentum", "rmsprop", "adam", "adamw")
# Tensors of optimizer state per trainable parameter (PyTorch's defaults).
OPTIMIZER_STATES: dict[str, int] = {"sgd": 0, "momentum": 1, "rmsprop": 1, "adam": 2, "adamw": 2}

_MODEL_KEYS = {"name", "kind", "input_shape", "batch_size", "optimizer", "mode", "layers"}
_GAN_KEYS = {"name", "kind", "batch_size", "optimizer", "mode", "generator", "discriminator"}
_NET_KEYS = {"input_shape", "layers"}
_TOML_LINE = re.compile(r"\s*\(at line (\d+), column \d+\)")


@dataclass(frozen=True, slots=True)
class Network:
    """A sequential stack with every layer's shape worked out."""

    input_shape: tuple[int, ...]
    integer_input: bool  # token ids for an Embedding (int64), else float data
    layers: tuple[LayerStats, ...]
    raw_layers: tuple[Mapping[str, Any], ...]

    @property
    def output_shape(self) -> tuple[int, ...]:
        return self.layers[-1].output_shape if self.layers else self.input_shape

    @property
    def input_elements(self) -> int:
        return math.prod(self.input_shape)

    @property
    def trainable_params(self) -> int:
        return sum(layer.trainable_params for layer in self.layers)

    @property
    def non_trainable_params(self) -> int:
        return sum(layer.non_trainable_params for layer in self.layers)

    @property
    def params(self) -> int:
        return self.trainable_params + self.non_trainable_params

    @property
    def flops(self) -> int:
        return sum(layer.flops for layer in self.layers)


@dataclass(frozen=True, slots=True)
class ModelSpec:
    name: str
    kind: Literal["sequential", "gan"]
    batch_size: int
    optimizer: Optimizer
    mode: Mode
    network: Network | None = None  # sequential
    generator: Network | None = None  # gan
    discriminator: Network | None = None  # gan

    @property
    def networks(self) -> tuple[Network, ...]:
        if self.network is not None:
            return (self.network,)
        assert self.generator is not None and self.discriminator is not None
        return (self.generator, self.discriminator)

    @property
    def params(self) -> int:
        return sum(n.params for n in self.networks)

    @property
    def trainable_params(self) -> int:
        return sum(n.trainable_params for n in self.networks)

    @property
    def flops(self) -> int:
        """Forward FLOPs per sample (for a GAN: generator plus discriminator)."""
        return sum(n.flops for n in self.networks)


def shown(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def load_models(path: Path) -> tuple[ModelSpec, ...]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"{shown(path)}: cannot read models file: {exc}") from None
    return parse_models(text, shown(path))


def parse_models(text: str, where: str = "<models>") -> tuple[ModelSpec, ...]:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        found = _TOML_LINE.search(str(exc))
        line = f":{found.group(1)}" if found else ""
        raise UserError(f"{where}{line}: invalid TOML: {_TOML_LINE.sub('', str(exc))}") from None
    unknown = set(data) - {"model"}
    if unknown:
        raise UserError(
            f"{where}: unknown top-level key {sorted(unknown)[0]!r} (expected [[model]])"
        )
    models = data.get("model")
    if not isinstance(models, list) or not models:
        raise UserError(f"{where}: no [[model]] tables found")
    specs = []
    names: set[str] = set()
    for i, raw in enumerate(models):
        spec = _model(raw, f"{where}: model[{i}]", where)
        if spec.name in names:
            raise UserError(f"{where}: model {spec.name!r}: name is used twice")
        names.add(spec.name)
        specs.append(spec)
    return tuple(specs)


def _model(raw: dict[str, Any], fallback: str, where: str) -> ModelSpec:
    name = raw.get("name")
    if not isinstance(name, str) or not name.strip():
        raise UserError(f"{fallback}: name: required, a non-empty string")
    ctx = f"{where}: model {name!r}"
    kind = raw.get("kind", "sequential")
    if kind not in ("sequential", "gan"):
        raise UserError(f'{ctx}: kind: must be "sequential" or "gan", got {kind!r}')
    allowed = _MODEL_KEYS if kind == "sequential" else _GAN_KEYS
    for key in raw:
        if key not in allowed:
            raise UserError(f"{ctx}: {key}: unknown field (allowed: {', '.join(sorted(allowed))})")
    batch = raw.get("batch_size", 32)
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise UserError(f"{ctx}: batch_size: must be a positive integer, got {batch!r}")
    optimizer = raw.get("optimizer", "adam")
    if optimizer not in OPTIMIZERS:
        raise UserError(
            f"{ctx}: optimizer: must be one of {', '.join(OPTIMIZERS)}, got {optimizer!r}"
        )
    mode = raw.get("mode", "train")
    if mode not in ("train", "inference"):
        raise UserError(f'{ctx}: mode: must be "train" or "inference", got {mode!r}')
    if kind == "sequential":
        network = _network(raw, ctx, "")
        return ModelSpec(name, "sequential", batch, optimizer, mode, network=network)
    parts = {}
    for part in ("generator", "discriminator"):
        table = raw.get(part)
        if not isinstance(table, dict):
            raise UserError(f"{ctx}: {part}: a GAN needs a [model.{part}] table")
        for key in table:
            if key not in _NET_KEYS:
                raise UserError(
                    f"{ctx}: {part}.{key}: unknown field (allowed: input_shape, layers)"
                )
        parts[part] = _network(table, ctx, f"{part}.")
    gen, disc = parts["generator"], parts["discriminator"]
    if gen.output_shape != disc.input_shape:
        raise UserError(
            f"{ctx}: discriminator.input_shape: {disc.input_shape} differs from the "
            f"generator's output {gen.output_shape}"
        )
    return ModelSpec(name, "gan", batch, optimizer, mode, generator=gen, discriminator=disc)


def _shape(value: Any, ctx: str, field: str) -> tuple[int, ...]:
    if (
        not isinstance(value, list)
        or not value
        or not all(isinstance(d, int) and not isinstance(d, bool) and d > 0 for d in value)
    ):
        raise UserError(f"{ctx}: {field}: must be a list of positive integers, got {value!r}")
    return tuple(value)


def _network(raw: Mapping[str, Any], ctx: str, prefix: str) -> Network:
    layers = raw.get("layers")
    if not isinstance(layers, list) or not layers:
        raise UserError(f"{ctx}: {prefix}layers: required, a non-empty list of layer tables")
    for i, layer in enumerate(layers):
        if not isinstance(layer, dict):
            raise UserError(
                f'{ctx}: {prefix}layers[{i}]: must be a table like {{ type = "Dense", ... }}'
            )
    first = layers[0]
    shape: tuple[int, ...] | None = None
    if "input_shape" in raw:
        shape = _shape(raw["input_shape"], ctx, f"{prefix}input_shape")
    else:
        where = f"{ctx}: {prefix}layers[0] ({first.get('type')})"
        if first.get("type") == "InputLayer" and ("shape" in first or "batch_shape" in first):
            if "shape" in first:
                shape = _shape(first["shape"], where, "shape")
            else:
                shape = _shape(first["batch_shape"][1:], where, "batch_shape")
        elif "input_shape" in first:
            shape = _shape(first["input_shape"], where, "input_shape")
        elif "input_dim" in first and first.get("type") == "Dense":
            shape = _shape([first["input_dim"]], where, "input_dim")
        elif "input_length" in first and first.get("type") == "Embedding":
            shape = _shape([first["input_length"]], where, "input_length")
    if shape is None:
        raise UserError(f"{ctx}: {prefix}input_shape: required (the per-sample input shape)")
    first_real = next((lay for lay in layers if lay.get("type") != "InputLayer"), first)
    integer_input = first_real.get("type") == "Embedding"
    stats = []
    current = shape
    for i, layer in enumerate(layers):
        kind = layer.get("type")
        if i > 0 and any(k in layer for k in ("input_shape", "batch_input_shape", "input_dim")):
            raise UserError(
                f"{ctx}: {prefix}layers[{i}] ({kind}): input_shape: only the first layer may declare it"
            )
        if kind == "InputLayer" and i > 0:
            raise UserError(
                f"{ctx}: {prefix}layers[{i}] (InputLayer): type: must be the first layer"
            )
        try:
            layer_stats = analyse_layer(i, layer, current)
        except LayerArgError as exc:
            label = kind if isinstance(kind, str) and kind in LAYERS else "?"
            raise UserError(
                f"{ctx}: {prefix}layers[{i}] ({label}): {exc.field}: {exc.reason}"
            ) from None
        stats.append(layer_stats)
        current = layer_stats.output_shape
    return Network(shape, integer_input, tuple(stats), tuple(layers))
