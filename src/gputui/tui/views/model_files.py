"""The models the Fit screen (and the fit line) judge, from whatever file was chosen.

A models TOML as always; also one Keras model (JSON or .keras archive), one
Hugging Face config (config.json or its model folder) or one GGUF file, told
apart by content (fit/importers/detect.py). A transformer read this way is
judged generating at the CLI's defaults (batch 1, 2048 tokens of context), in
the weights it is stored in (a GGUF file's quantization), as `gputui fit FILE`
without flags does.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any


def load_any(path: Path) -> tuple[Any, ...]:
    """The models `path` describes; one-line UserErrors as the loaders give them."""
    from gputui.fit.importers import detect_kind
    from gputui.fit.modelsfile import load_keras_model, load_models

    kind = detect_kind(path)
    if kind == "toml":
        return load_models(path)
    if kind in ("keras-json", "keras-archive"):
        return (load_keras_model(path),)
    from gputui.fit.transformer.kv_moments import default_kv_dtype
    from gputui.fit.transformer.table import TransformerSpec
    from gputui.fit.transformer.workload import Workload

    if kind == "gguf":
        from gputui.fit.importers.gguf import load_gguf

        model = load_gguf(path)
    else:
        from gputui.fit.importers.hf import load_path

        model = load_path(path)
    weights = model.default_weights
    workload = replace(Workload(), weights=weights, kv_dtype=default_kv_dtype(model, weights))
    return (TransformerSpec(model.name, model, workload),)
