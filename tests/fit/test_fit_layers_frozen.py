"""`fit --layers` / `--json` per-layer kept figures follow the memory walk for frozen layers:
a layer nothing upstream of it trains records nothing, and a frozen Dense after a trainable
one keeps no input for a weight gradient it does not compute."""

from __future__ import annotations

from gputui.fit.importers.modelsfile import parse_models
from gputui.fit.report import network_layers

FROZEN = """
[[model]]
name = "f"
input_shape = [128]
layers = [
  { name = "a", type = "Dense", units = 64, trainable = false },
  { name = "t", type = "Activation", activation = "tanh" },
  { name = "b", type = "Dense", units = 32, trainable = false },
  { name = "c", type = "Dense", units = 10 },
  { name = "d", type = "Dense", units = 10, trainable = false },
  { name = "e", type = "Dense", units = 4 },
]
"""


def test_frozen_layers_keep_what_the_memory_walk_keeps() -> None:
    (model,) = parse_models(FROZEN)
    assert model.network is not None
    kept = {d["name"]: d["saved_bytes_per_sample_fp32"] for d in network_layers(model.network)}
    # a, t, b: nothing trainable at or upstream of them, no autograd record at all (t, a
    # tanh, would keep its output for its backward if anything before it trained)
    # c: trains, keeps its 32-float input; d: frozen, its input needs a gradient (c trains)
    # but its own weights take none, so no input kept; e: keeps d's 10 floats
    assert kept == {"a": 0, "t": 0, "b": 0, "c": 32 * 4, "d": 0, "e": 10 * 4}


def test_all_trainable_layers_keep_their_inputs() -> None:
    (model,) = parse_models(FROZEN.replace(", trainable = false", ""))
    assert model.network is not None
    kept = [d["saved_bytes_per_sample_fp32"] for d in network_layers(model.network)]
    assert kept == [128 * 4, 64 * 4, 64 * 4, 32 * 4, 10 * 4, 10 * 4]
