"""The one importer registry: `load_any(path)` turns any model file gputui reads into
model descriptions, whatever its kind (decided by content, detect.py).

A models TOML gives its layer models and `kind = "transformer"` tables; a Keras JSON
or .keras archive one layer model; a Hugging Face config.json or model folder, a
safetensors file in a model folder and a GGUF file one transformer, with the
workload `gputui fit FILE` uses without flags (fit.transformer.ask: generate for a
decoder at 2048 tokens of context, inference for an encoder, a GGUF prompt in
llama.cpp's 512-token chunks). The CLI, the Fit screen and the exporter all read
files here, so a file means the same model everywhere.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gputui.core.errors import UserError
from gputui.fit.graph.runtime import RUNTIMES, Runtime
from gputui.fit.importers.detect import FileKind, detect_kind

if TYPE_CHECKING:
    from gputui.fit.importers.modelsfile import AnyModel
    from gputui.fit.transformer.model import TransformerModel
    from gputui.fit.transformer.spec import TransformerSpec

__all__ = ["TRANSFORMER_KINDS", "detect_kind", "load_any", "load_transformer", "transformer_spec"]

# the kinds that hold one transformer (the rest: layer models)
TRANSFORMER_KINDS: tuple[FileKind, ...] = ("hf-config", "hf-folder", "gguf", "safetensors")


def load_any(
    path: Path,
    *,
    input_shapes: Mapping[str, Any] | None = None,
    skip_unknown: bool = False,
    runtime: str | None = None,
) -> tuple[AnyModel, ...]:
    """The models `path` describes (one-line UserErrors naming the file).

    `input_shapes` and `skip_unknown` are a Keras file's options; given for another
    kind they are refused, not ignored. `runtime` (--runtime) is a Keras file's runtime,
    so the backend Keras is configured with is not read; a models TOML's are replaced
    by the caller."""
    from gputui.fit.importers.modelsfile import load_keras_model, load_models, shown

    kind = detect_kind(path)
    if kind in ("keras-json", "keras-archive"):
        given: tuple[Runtime, str] | None = None
        if runtime is not None:
            if runtime not in RUNTIMES:
                raise UserError(f"--runtime: must be one of {', '.join(RUNTIMES)}")
            given = (runtime, "--runtime")
        return (
            load_keras_model(
                path,
                input_shapes=input_shapes,
                skip_unknown=skip_unknown,
                runtime=given,
            ),
        )
    if input_shapes or skip_unknown:
        raise UserError(
            f"{shown(path)}: input shapes and skip-unknown apply to a Keras file; in a models "
            "TOML write input_shapes = { ... } and skip_unknown = true on the keras model's table"
            if kind == "toml"
            else f"{shown(path)}: input shapes and skip-unknown apply to a Keras file, "
            f"not a {kind} file"
        )
    if kind == "toml":
        return load_models(path)
    return (transformer_spec(load_transformer(path, kind)),)


def load_transformer(path: Path, kind: FileKind | None = None) -> TransformerModel:
    """The transformer an HF config / folder, a safetensors file of a folder or a GGUF holds."""
    from gputui.fit.importers.modelsfile import shown

    kind = kind or detect_kind(path)
    if kind == "gguf":
        from gputui.fit.importers.gguf import load_gguf

        return load_gguf(path)
    from gputui.fit.importers.hf import load_path

    if kind == "safetensors":
        folder = path.parent
        if not (folder / "config.json").is_file():
            raise UserError(
                f"{shown(path)}: a safetensors file holds weights only; give its model folder "
                "(with config.json) or the config"
            )
        return load_path(folder)
    if kind not in TRANSFORMER_KINDS:
        raise UserError(f"{shown(path)}: a {kind} file is not a transformer model")
    return load_path(path)


def transformer_spec(model: TransformerModel) -> TransformerSpec:
    """`model` with the workload `gputui fit FILE` uses when no flag is given."""
    from gputui.fit.transformer.ask import WorkloadAsk, build_workload
    from gputui.fit.transformer.spec import TransformerSpec

    return TransformerSpec(model.name, model, build_workload(WorkloadAsk(), model))
