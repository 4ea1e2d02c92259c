"""The models file: TOML whose layer lists read like the Keras code they came from.

Parsing stops at the first problem with one line naming the file, the model,
the layer (as `layers[i] (Type)`, plus its name in a graph) and the field: the
CLI prints it and exits 2. Every string taken from the file and echoed back
(model and layer names, unknown keys) goes through `textsafe.visible()`.

`parse_model_table()` turns one `[[model]]` table (a dict) into a ModelSpec; the
Keras importer builds exactly such a dict from a Keras JSON file.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

from gputui.core.errors import UserError
from gputui.core.pathprobe import absolute, probe, short
from gputui.core.textsafe import visible
from gputui.core.tomlsafe import parse_toml
from gputui.fit.core.software import DEFAULT_SOFTWARE, Software, memory_format, optimizer_impl
from gputui.fit.graph.build import GraphBuilder, sequential_network
from gputui.fit.graph.gcpause import collector_paused
from gputui.fit.graph.layer_args import MAX_DIM, LayerArgError
from gputui.fit.graph.layers.attention import ATTENTION_MODES
from gputui.fit.graph.limits import MAX_LAYERS, too_many_layers
from gputui.fit.graph.network import ModelInput, Network
from gputui.fit.graph.runtime import RUNTIMES, Runtime
from gputui.fit.graph.spec import MODES, OPTIMIZER_STATES, OPTIMIZERS, ModelSpec
from gputui.fit.graph.syntax import check_elements

if TYPE_CHECKING:
    from gputui.fit.torch.spec import TorchSpec
    from gputui.fit.transformer.spec import TransformerSpec

__all__ = [
    "MAX_LAYERS",
    "MODES",
    "OPTIMIZERS",
    "OPTIMIZER_STATES",
    "AnyModel",
    "ModelSpec",
    "Network",
    "load_keras_model",
    "load_models",
    "parse_model_table",
    "parse_models",
    "shown",
]

# how the framework runs it (fit.core.software): the speed estimate's kernels, not the memory
_SOFTWARE_KEYS = {"memory_format", "optimizer_impl"}
_COMMON = {"name", "kind", "batch_size", "optimizer", "mode", "attention", "runtime"} | _SOFTWARE_KEYS
_MODEL_KEYS = _COMMON | {"input_shape", "layers"}
_FUNCTIONAL_KEYS = _COMMON | {"inputs", "outputs", "layers", "blocks"}
_GAN_KEYS = _COMMON | {"generator", "discriminator"}
_NET_KEYS = {"input_shape", "layers"}
MAX_BATCH = 1 << 24
# the longest error line: the known layer types (about 1,100 characters) still fit whole
MAX_MESSAGE = 1500


# What a models file holds: layer models and (kind = "transformer") Hugging Face-style configs.
AnyModel: TypeAlias = "ModelSpec | TransformerSpec | TorchSpec"


def layer_models(models: tuple[AnyModel, ...]) -> tuple[ModelSpec, ...]:
    """The layer models of a mixed tuple (for consumers that only estimate those)."""
    return tuple(m for m in models if isinstance(m, ModelSpec))


def shown(path: Path) -> str:
    """How a models or Keras file is named in messages: relative to the working folder when
    inside it. It never asks the file system about `path` (a link loop, a name too long),
    as it names the file in the very message that says so."""
    full = absolute(path)
    try:
        text = str(full.relative_to(Path(os.getcwd())))
    except (OSError, ValueError):
        text = str(path)
    return short(text)


@collector_paused
def load_models(path: Path) -> tuple[AnyModel, ...]:
    from gputui.core import inputfile

    text = inputfile.read_text(path, inputfile.TOML_CAP, "models file", shown(path))
    return parse_models(text, shown(path), base=path.parent)


def parse_models(
    text: str, where: str = "<models>", base: Path | None = None
) -> tuple[AnyModel, ...]:
    """Every model of a models file, in file order; `base` is where a sidecar's
    `keras = "path"` and a transformer's `hf_config = "path"` are relative to."""
    try:
        return _parse_models(text, where, base)
    except UserError as exc:
        # one boundary for everything echoed from the file: names, keys, values
        raise UserError(one_line(str(exc)), exc.exit_code) from None


def one_line(message: str, limit: int = MAX_MESSAGE) -> str:
    """A message as printed: control characters visible, and a value echoed whole (a
    5,000-item list, a 400-digit number) elided in the middle so the line stays readable."""
    text = visible(message)
    if len(text) <= limit:
        return text
    head, tail = text[: limit * 2 // 3], text[-(limit // 3) :]
    return f"{head}…({len(text) - len(head) - len(tail):,} characters left out)…{tail}"


def _parse_models(text: str, where: str, base: Path | None) -> tuple[AnyModel, ...]:
    # the one TOML boundary (digit limits, nesting, dotted keys), as scenarios and the catalog
    data = parse_toml(text, where)
    unknown = set(data) - {"model"}
    if unknown:
        raise UserError(
            f"{where}: unknown top-level key {sorted(unknown)[0]!r} (expected [[model]])"
        )
    models = data.get("model")
    if not isinstance(models, list) or not models:
        raise UserError(f"{where}: no [[model]] tables found")
    specs: list[AnyModel] = []
    names: set[str] = set()
    for i, raw in enumerate(models):
        if not isinstance(raw, dict):
            raise UserError(f"{where}: model[{i}]: must be a [[model]] table")
        if raw.get("kind") == "transformer":
            spec: AnyModel = _transformer(raw, f"{where}: model[{i}]", where, base or Path.cwd())
        elif raw.get("kind") == "torch":
            from gputui.fit.importers.torch_table import torch_spec

            spec = torch_spec(raw, f"{where}: model[{i}]", base or Path.cwd())
        elif "keras" in raw:
            spec = _sidecar(raw, f"{where}: model[{i}]", where, base or Path.cwd())
        else:
            spec = _model(raw, f"{where}: model[{i}]", where)
        if spec.name in names:
            raise UserError(f"{where}: model {spec.name!r}: name is used twice")
        names.add(spec.name)
        specs.append(spec)
    return tuple(specs)


def _transformer(raw: dict[str, Any], fallback: str, where: str, base: Path) -> TransformerSpec:
    """A `kind = "transformer"` table: the transformer's model and workload (transformer_table.py)."""
    from gputui.fit.importers.hf import load_path
    from gputui.fit.importers.transformer_table import from_model_table

    name = raw.get("name")
    ctx = f"{where}: model {visible(name)!r}" if isinstance(name, str) and name else fallback
    return from_model_table(raw, ctx, base, load_path)


def parse_model_table(raw: dict[str, Any], where: str) -> ModelSpec:
    """One model table (as parsed from a `[[model]]` in TOML) as a ModelSpec.

    `where` names the source in error lines (a file name). Raises UserError with
    one line naming the model, layer and field.
    """
    if not isinstance(raw, dict):
        raise UserError(f"{visible(where)}: a model must be a table")
    try:
        return _model(raw, f"{where}: model", where)
    except UserError as exc:
        raise UserError(one_line(str(exc)), exc.exit_code) from None


_SIDECAR_KEYS = (
    {"name", "keras", "batch_size", "optimizer", "mode", "attention", "runtime"}
    | {"input_shapes", "skip_unknown"}
    | _SOFTWARE_KEYS
)


def _sidecar(raw: dict[str, Any], fallback: str, where: str, base: Path) -> ModelSpec:
    """`{ name = "x", keras = "model.json", batch_size = 64 }`: a Keras file plus training settings."""
    name = raw.get("name")
    ctx = f"{where}: model {visible(name)!r}" if isinstance(name, str) else fallback
    for key in raw:
        if key not in _SIDECAR_KEYS:
            raise UserError(
                f"{ctx}: {key}: unknown field (a keras model takes: {', '.join(sorted(_SIDECAR_KEYS))})"
            )
    path = raw.get("keras")
    if not isinstance(path, str) or not path:
        raise UserError(f"{ctx}: keras: must be the path of a Keras .json or .keras file")
    shapes = raw.get("input_shapes", {})
    if not isinstance(shapes, dict):
        raise UserError(f"{ctx}: input_shapes: must be a table like {{ tokens = [40] }}")
    for key, value in shapes.items():
        shape_field(value, ctx, f"input_shapes.{key}")
    skip = raw.get("skip_unknown", False)
    if not isinstance(skip, bool):
        raise UserError(f"{ctx}: skip_unknown: must be true or false, got {skip!r}")
    keys: tuple[str, ...] = (
        "batch_size",
        "optimizer",
        "mode",
        "attention",
        "runtime",
        *_SOFTWARE_KEYS,
    )
    settings: dict[str, Any] = {k: raw[k] for k in keys if k in raw}
    return load_keras_model(
        base / path,
        name=name if isinstance(name, str) else None,
        input_shapes=shapes,
        skip_unknown=skip,
        settings=settings,
    )


@collector_paused
def load_keras_model(
    path: Path,
    *,
    name: str | None = None,
    input_shapes: Mapping[str, Any] | None = None,
    skip_unknown: bool = False,
    settings: Mapping[str, Any] | None = None,
    runtime: tuple[Runtime, str] | None = None,
) -> ModelSpec:
    """A Keras `to_json()` file or `.keras` archive as a ModelSpec (its policy as `precision`).

    Its runtime: `runtime` (runtime, why) when given, else the table's `runtime`, else
    the backend Keras is configured with here (keras_config.py)."""
    from gputui.fit.importers.keras import load_keras
    from gputui.fit.importers.keras_config import configured_runtime

    where = shown(path)
    if probe(path) is None:  # anything else there is refused by the reader, in one line
        raise UserError(f"{where}: no such Keras model file")
    model = load_keras(
        path, name=name, input_shapes=input_shapes, skip_unknown=skip_unknown, where=where
    )
    table = {**model.table, **(settings or {})}
    spec = parse_model_table(table, where)
    if runtime is None and "runtime" not in table:
        runtime = configured_runtime()
    if runtime is not None:
        spec = replace(spec, runtime=runtime[0], runtime_source=runtime[1])
    return replace(spec, precision=model.precision, source_warnings=tuple(model.warnings))


def _model(raw: dict[str, Any], fallback: str, where: str) -> ModelSpec:
    name = raw.get("name")
    if not isinstance(name, str) or not name.strip():
        raise UserError(f"{fallback}: name: required, a non-empty string")
    name = visible(name)
    ctx = f"{where}: model {name!r}"
    kind = raw.get("kind", "sequential")
    if kind not in ("sequential", "functional", "gan"):
        raise UserError(
            f'{ctx}: kind: must be "sequential", "functional", "gan", "transformer" or "torch", got {kind!r}'
        )
    allowed = {"sequential": _MODEL_KEYS, "functional": _FUNCTIONAL_KEYS, "gan": _GAN_KEYS}[kind]
    for key in raw:
        if key not in allowed:
            raise UserError(f"{ctx}: {key}: unknown field (allowed: {', '.join(sorted(allowed))})")
    batch = raw.get("batch_size", 32)
    if isinstance(batch, bool) or not isinstance(batch, int) or not 1 <= batch <= MAX_BATCH:
        raise UserError(
            f"{ctx}: batch_size: must be a positive integer (at most {MAX_BATCH}), got {batch!r}"
        )
    optimizer = raw.get("optimizer", "adam")
    if optimizer not in OPTIMIZERS:
        raise UserError(
            f"{ctx}: optimizer: must be one of {', '.join(OPTIMIZERS)}, got {optimizer!r}"
        )
    mode = raw.get("mode", "train")
    if mode not in MODES:
        raise UserError(f"{ctx}: mode: must be one of {', '.join(MODES)}, got {mode!r}")
    attention = raw.get("attention", "auto")
    if attention not in ATTENTION_MODES:
        raise UserError(
            f"{ctx}: attention: must be one of {', '.join(ATTENTION_MODES)}, got {attention!r}"
        )
    sw = software(raw, ctx)
    run = _runtime(raw, ctx)
    if kind == "sequential":
        network = _sequential(raw, ctx, "", attention, batch)
        return ModelSpec(
            name, "sequential", batch, optimizer, mode, network, attention=attention, software=sw, **run
        )
    if kind == "functional":
        network = GraphBuilder(ctx, attention).model(raw)
        return ModelSpec(
            name, "functional", batch, optimizer, mode, network, attention=attention, software=sw, **run
        )
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
        parts[part] = _sequential(table, ctx, f"{part}.", attention, batch)
    gen, disc = parts["generator"], parts["discriminator"]
    if gen.output_shape != disc.input_shape:
        raise UserError(
            f"{ctx}: discriminator.input_shape: {disc.input_shape} differs from the "
            f"generator's output {gen.output_shape}"
        )
    return ModelSpec(
        name,
        "gan",
        batch,
        optimizer,
        mode,
        generator=gen,
        discriminator=disc,
        attention=attention,
        software=sw,
        **run,
    )


def _runtime(raw: Mapping[str, Any], ctx: str) -> dict[str, Any]:
    """A model table's `runtime` (PyTorch when absent: graph/runtime.py says why)."""
    if "runtime" not in raw:
        return {}
    value = raw["runtime"]
    if value not in RUNTIMES:
        raise UserError(f"{ctx}: runtime: must be one of {', '.join(RUNTIMES)}, got {value!r}")
    return {"runtime": value, "runtime_source": "the model table's runtime"}


def software(raw: Mapping[str, Any], ctx: str) -> Software:
    """A model table's `memory_format` and `optimizer_impl` (PyTorch 2's defaults if absent)."""
    try:
        fmt = memory_format(raw.get("memory_format", DEFAULT_SOFTWARE.memory_format))
    except ValueError as exc:
        raise UserError(f"{ctx}: memory_format: {exc}") from None
    try:
        impl = optimizer_impl(raw.get("optimizer_impl", DEFAULT_SOFTWARE.optimizer))
    except ValueError as exc:
        raise UserError(f"{ctx}: optimizer_impl: {exc}") from None
    return Software(memory_format=fmt, optimizer=impl)


def shape_field(value: Any, ctx: str, field: str) -> tuple[int, ...]:
    if (
        not isinstance(value, list)
        or not value
        or not all(isinstance(d, int) and not isinstance(d, bool) and d > 0 for d in value)
    ):
        raise UserError(f"{ctx}: {field}: must be a list of positive integers, got {value!r}")
    if any(d > MAX_DIM for d in value):
        raise UserError(f"{ctx}: {field}: every dimension must be at most {MAX_DIM}")
    check_elements(value, ctx, field)
    return tuple(value)


def _sequential(
    raw: Mapping[str, Any], ctx: str, prefix: str, attention: str, batch: int
) -> Network:
    layers = raw.get("layers")
    if not isinstance(layers, list) or not layers:
        raise UserError(f"{ctx}: {prefix}layers: required, a non-empty list of layer tables")
    if len(layers) > MAX_LAYERS:
        raise too_many_layers(f"{ctx}: {prefix}layers", len(layers))
    for i, layer in enumerate(layers):
        if not isinstance(layer, dict):
            raise UserError(
                f'{ctx}: {prefix}layers[{i}]: must be a table like {{ type = "Dense", ... }}'
            )
    from gputui.fit.graph.layers.inputs import declared_batch, declared_input
    from gputui.fit.graph.registry import is_known

    def label(i: int) -> str:
        kind = layers[i].get("type")
        return f"{ctx}: {prefix}layers[{i}] ({kind if is_known(kind) else '?'})"

    model_shape = (
        shape_field(raw["input_shape"], ctx, f"{prefix}input_shape")
        if "input_shape" in raw
        else None
    )
    for i, layer in enumerate(layers):
        if i > 0 and layer.get("type") == "InputLayer":
            raise UserError(f"{label(i)}: type: must be the first layer")
        try:
            declared = declared_input(layer)
            fixed = declared_batch(layer)
        except LayerArgError as exc:
            raise UserError(f"{label(i)}: {exc.field}: {exc.reason}") from None
        if fixed is not None and fixed[1] != batch:
            raise UserError(
                f"{label(i)}: {fixed[0]}: fixes the batch at {fixed[1]}, but the model's "
                f"batch_size is {batch} (leave the batch out, or make them agree)"
            )
        if declared is None:
            continue
        field, shape = declared
        if i > 0:
            raise UserError(f"{label(i)}: {field}: only the first layer may declare the input")
        if model_shape is not None and shape != model_shape:
            raise UserError(
                f"{label(i)}: {field}: {list(shape)} differs from the model's "
                f"{prefix}input_shape {list(model_shape)}"
            )
        model_shape = shape
    first = next((lay for lay in layers if lay.get("type") != "InputLayer"), layers[0])
    integer = first.get("type") in ("Embedding", "TokenAndPositionEmbedding")
    if model_shape is None and first.get("type") == "Embedding" and "input_length" in first:
        model_shape = shape_field([first["input_length"]], label(0), "input_length")
    if model_shape is None:
        raise UserError(f"{ctx}: {prefix}input_shape: required (the per-sample input shape)")
    return sequential_network(
        ModelInput("input", model_shape, integer), layers, ctx, prefix, attention
    )
