"""Graph CNNs in inference against PyTorch on CPU (skipped without torch).

The estimate read +18 % to +30 % high on DenseNet- and VGG-style graphs (one
input-sized reorder buffer too many at every convolution) and missed a 2-D max
pool's int64 indices and the padded copy of an asymmetric "same" pooling. Target: within 5 % over
and never more than 5 % under.
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
        "fit_accuracy_bench_cnn", ROOT / "benchmarks" / "fit_accuracy.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


MODELS = """
[[model]]
name = "dense"
kind = "functional"
mode = "inference"
inputs = [ { name = "x", shape = [24, 24, 32] } ]
layers = [
  { name = "bn1", type = "BatchNormalization", inputs = ["x"] },
  { name = "r1", type = "ReLU" },
  { name = "c1", type = "Conv2D", filters = 64, kernel_size = 1, use_bias = false },
  { name = "r1b", type = "ReLU" },
  { name = "c1b", type = "Conv2D", filters = 16, kernel_size = 3, padding = "same", use_bias = false },
  { name = "cat1", type = "Concatenate", inputs = ["x", "c1b"] },
  { name = "bn2", type = "BatchNormalization" },
  { name = "r2", type = "ReLU" },
  { name = "c2", type = "Conv2D", filters = 64, kernel_size = 1, use_bias = false },
  { name = "r2b", type = "ReLU" },
  { name = "c2b", type = "Conv2D", filters = 16, kernel_size = 3, padding = "same", use_bias = false },
  { name = "cat2", type = "Concatenate", inputs = ["cat1", "c2b"] },
  { name = "pool", type = "AveragePooling2D" },
  { name = "gap", type = "GlobalAveragePooling2D" },
  { name = "out", type = "Dense", units = 10, activation = "softmax" },
]

[[model]]
name = "vgg"
input_shape = [48, 48, 3]
mode = "inference"
layers = [
  { type = "Conv2D", filters = 32, kernel_size = 3, padding = "same", activation = "relu" },
  { type = "Conv2D", filters = 32, kernel_size = 3, padding = "same", activation = "relu" },
  { type = "MaxPooling2D" },
  { type = "Conv2D", filters = 64, kernel_size = 3, padding = "same", activation = "relu" },
  { type = "Conv2D", filters = 64, kernel_size = 3, padding = "same", activation = "relu" },
  { type = "MaxPooling2D" },
  { type = "Flatten" },
  { type = "Dense", units = 64, activation = "relu" },
  { type = "Dense", units = 10, activation = "softmax" },
]

[[model]]
name = "branches"
kind = "functional"
mode = "inference"
inputs = [ { name = "x", shape = [33, 33, 24] } ]
layers = [
  { name = "a", type = "Conv2D", filters = 16, kernel_size = 1, activation = "relu", inputs = ["x"] },
  { name = "b", type = "Conv2D", filters = 24, kernel_size = 3, padding = "same", activation = "relu", inputs = ["x"] },
  { name = "p", type = "MaxPooling2D", pool_size = 3, strides = 1, padding = "same", inputs = ["x"] },
  { name = "cat", type = "Concatenate", inputs = ["a", "b", "p"] },
  { name = "down", type = "MaxPooling2D", pool_size = 2, padding = "same" },
  { name = "gap", type = "GlobalAveragePooling2D" },
  { name = "out", type = "Dense", units = 10 },
]
"""


@pytest.mark.slow
@pytest.mark.parametrize("name", ["dense", "vgg", "branches"])
def test_cnn_inference_within_five_percent_of_pytorch(name: str) -> None:
    from gputui.fit.importers.modelsfile import parse_models

    bench = _bench()
    model = {m.name: m for m in parse_models(MODELS)}[name]
    for batch in (16, 64):
        measured = bench.measure_cpu(model, batch, steps=2)
        estimate, _ = bench.estimate(model, batch, "cpu")
        error = (estimate - measured) / measured
        assert -0.05 <= error <= 0.05, (batch, estimate, measured)
