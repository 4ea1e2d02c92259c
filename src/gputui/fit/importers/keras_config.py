"""The backend Keras 3 is configured with on this machine, as Keras itself decides it.

Keras reads `KERAS_BACKEND`, else the "backend" of `keras.json` in `KERAS_HOME`
(default `~/.keras`), else uses "tensorflow". A Keras model file is estimated for that
runtime unless `--runtime` or the models TOML says otherwise; the reason is kept so the
answer can say which runtime it assumed and why.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from gputui.core.errors import UserError
from gputui.core.inputfile import parse_json, read_capped, shown
from gputui.core.pathprobe import probe
from gputui.core.textsafe import visible
from gputui.fit.graph.runtime import KERAS_BACKENDS, Runtime

CONFIG_CAP = 64 * 1024  # keras.json holds five short fields


def _runtime(name: object, where: str) -> Runtime:
    if isinstance(name, str) and name in KERAS_BACKENDS:
        return KERAS_BACKENDS[name]
    known = ", ".join(KERAS_BACKENDS)
    raise UserError(
        f"{where}: a Keras backend gputui does not model ({known}), got "
        f"{visible(repr(name))[:60]}; pass --runtime"
    )


def config_path(env: Mapping[str, str]) -> Path:
    home = env.get("KERAS_HOME") or os.path.join(os.path.expanduser("~"), ".keras")
    return Path(home) / "keras.json"


def configured_runtime(env: Mapping[str, str] | None = None) -> tuple[Runtime, str]:
    """(runtime, why): the backend Keras would load here, and where that came from."""
    env = os.environ if env is None else env
    name = env.get("KERAS_BACKEND")
    if name:
        return _runtime(name, "KERAS_BACKEND"), f"KERAS_BACKEND={visible(name)}"
    path = config_path(env)
    if probe(path) is not None:
        where = shown(path)
        data = parse_json(read_capped(path, CONFIG_CAP, "Keras config"), where)
        if not isinstance(data, dict):
            raise UserError(f"{where}: must be a JSON object like {{\"backend\": \"torch\"}}")
        if "backend" in data:
            backend = data["backend"]
            return _runtime(backend, f"{where}: backend"), f"{where} (backend {backend})"
    return "keras-tensorflow", "Keras' default backend (no KERAS_BACKEND, no keras.json backend)"
