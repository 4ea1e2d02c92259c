"""Every key of a models-file layer model, Keras sidecar and layer table given a hostile
value: one error line of bounded length naming the file, never a traceback and never the
value echoed whole (a 5,000-item list, a 400-digit number, a 3,000-character string)."""

from __future__ import annotations

import itertools
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fuzz"))

from family_transformer_table import toml_value  # noqa: E402

from gputui.core.errors import UserError  # noqa: E402
from gputui.fit.importers.modelsfile import parse_models  # noqa: E402

# the known layer types (about 1,100 characters) fit; no echoed value makes a line longer
LONGEST = 1600
MODEL = {"name": "m", "input_shape": [8], "layers": [{"type": "Dense", "units": 4}]}
SIDECAR = {"name": "k", "keras": "x.json"}
HOSTILE: list[Any] = [
    10**400, -(10**400), float("nan"), float("inf"), [16], [10**400], ["a" * 3000],
    "a" * 3000, {"a": 1}, [[1]], True, 1.5, [], "\x1b[2J", list(range(5000)),
]  # fmt: skip
MODEL_KEYS = ["name", "kind", "batch_size", "optimizer", "mode", "attention", "memory_format",
              "optimizer_impl", "input_shape", "layers", "inputs", "outputs", "blocks"]  # fmt: skip
SIDECAR_KEYS = ["input_shapes", "skip_unknown", "batch_size", "optimizer"]
LAYER_KEYS = ["units", "type", "activation", "name", "input_shape", "rate", "filters",
              "kernel_size", "strides", "padding", "use_bias", "dtype"]  # fmt: skip


def tables() -> list[tuple[str, dict[str, Any]]]:
    out = []
    for key, value in itertools.product(MODEL_KEYS, HOSTILE):
        out.append((key, {**MODEL, key: value}))
    for key, value in itertools.product(SIDECAR_KEYS, HOSTILE):
        out.append((f"keras {key}", {**SIDECAR, key: value}))
    for key, value in itertools.product(LAYER_KEYS, HOSTILE):
        out.append(
            (f"layer {key}", {**MODEL, "layers": [{"type": "Dense", "units": 4, key: value}]})
        )
    return out


def test_every_key_with_a_hostile_value_is_one_bounded_line(tmp_path: Path) -> None:
    found = []
    for label, table in tables():
        text = "[[model]]\n" + "".join(f"{k} = {toml_value(v)}\n" for k, v in table.items())
        try:
            parse_models(text, "models.toml", base=tmp_path)
        except UserError as exc:
            message = str(exc)
            if (
                "\n" in message
                or len(message) > LONGEST
                or not ("models.toml" in message or "x.json" in message)
            ):
                found.append((label, len(message), message[:100]))
    assert not found, found[:5]


@pytest.mark.parametrize("count", [5000, 50_000])
def test_a_long_value_is_elided_in_the_middle(count: int) -> None:
    text = f'[[model]]\nname = "m"\ninput_shape = {list(range(count))}\n'
    text += 'layers = [{ type = "Dense", units = 4 }]\n'
    with pytest.raises(UserError) as err:
        parse_models(text, "models.toml")
    message = str(err.value)
    assert message.startswith("models.toml: model 'm': input_shape: must be a list of positive")
    assert "characters left out" in message and message.endswith(f"{count - 1}]")
