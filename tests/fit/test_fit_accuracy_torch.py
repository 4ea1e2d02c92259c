"""The estimate against PyTorch's own bookkeeping on CPU (skipped without the calibrate extra).

Tolerances are the product requirement: within 15 % of measured tensor memory
and never more than 10 % under.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from tests.torch_required import require_torch  # noqa: E402

require_torch()

ROOT = Path(__file__).resolve().parents[2]


def _bench():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location(
        "fit_accuracy_bench", ROOT / "benchmarks" / "fit_accuracy.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


MODELS = """
[[model]]
name = "cnn"
input_shape = [32, 32, 3]
optimizer = "adam"
layers = [
  { type = "Conv2D", filters = 16, kernel_size = 3, padding = "same", activation = "relu" },
  { type = "MaxPooling2D" },
  { type = "BatchNormalization" },
  { type = "Conv2D", filters = 32, kernel_size = 3, activation = "elu" },
  { type = "Flatten" },
  { type = "Dropout", rate = 0.3 },
  { type = "Dense", units = 10, activation = "softmax" },
]

[[model]]
name = "gru"
input_shape = [30]
optimizer = "rmsprop"
layers = [
  { type = "Embedding", input_dim = 500, output_dim = 32 },
  { type = "GRU", units = 48, return_sequences = true },
  { type = "GlobalMaxPooling1D" },
  { type = "Dense", units = 2, activation = "softmax" },
]
"""


@pytest.mark.slow
@pytest.mark.parametrize("name", ["cnn", "gru"])
def test_estimate_within_tolerance_of_pytorch(name: str) -> None:
    from gputui.fit.importers.modelsfile import parse_models

    bench = _bench()
    model = {m.name: m for m in parse_models(MODELS)}[name]
    for batch in (4, 64):
        measured = bench.measure_cpu(model, batch, steps=2)
        estimate, _ = bench.estimate(model, batch, "cpu")
        error = (estimate - measured) / measured
        assert -0.10 <= error <= 0.15, (batch, estimate, measured)
