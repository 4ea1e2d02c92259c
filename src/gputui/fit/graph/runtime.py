"""Which framework runs a layer model, and whether the layer walk models it.

The walk (memory.py) models PyTorch's eager execution. Keras 3 on its torch backend
runs the same kernels but keeps more alive (keras_torch.py): its functional executor,
its own batch norm and its training step. Keras on TensorFlow or JAX is not modelled:
there the estimate is PyTorch-style, and every answer says so rather than passing it
off as theirs.
"""

from __future__ import annotations

from typing import Literal

Runtime = Literal["pytorch", "keras-torch", "keras-tensorflow", "keras-jax"]
RUNTIMES: tuple[Runtime, ...] = ("pytorch", "keras-torch", "keras-tensorflow", "keras-jax")
MODELLED: frozenset[str] = frozenset({"pytorch", "keras-torch"})
# Keras 3's backend names (KERAS_BACKEND, keras.json's "backend") and the runtime each is
KERAS_BACKENDS: dict[str, Runtime] = {
    "torch": "keras-torch",
    "tensorflow": "keras-tensorflow",
    "jax": "keras-jax",
}
# A models-TOML layer table is written in PyTorch's terms (its shipped examples, the
# measured harness that translates them to torch.nn): PyTorch unless it says otherwise.
LAYER_TABLE_SOURCE = "a models-TOML layer table (PyTorch unless it sets runtime)"


def runtime_note(runtime: str) -> str | None:
    """The line an estimate carries when its runtime is not modelled (None when it is)."""
    if runtime in MODELLED:
        return None
    return (
        f"runtime {runtime} is not modelled: this estimate is PyTorch-style (the same layers "
        "as PyTorch eager runs them); that runtime allocates differently"
    )


def runtime_facts(runtime: str, source: str) -> dict[str, object]:
    """The runtime part of a layer model's JSON `assumptions`."""
    return {
        "runtime": runtime,
        "runtime_source": source,
        "runtime_modelled": runtime in MODELLED,
        "runtime_note": runtime_note(runtime),
    }
