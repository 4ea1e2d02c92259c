"""A models file's `kind = "torch"` table: checked when the file loads, nothing of the
user's imported or run until it is estimated (so it loads without torch)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gputui.core.errors import UserError
from gputui.fit import TorchSpec, load_any

GOOD = """\
[[model]]
name = "resnet"
kind = "torch"
torch = "nets/resnet.py:build"
input_shape = ["3,224,224", "8:int64"]
loss = "nets/resnet.py:loss"
mode = "train"
optimizer = "sgd"
batch_size = 16
precision = "amp_bf16"
"""


def test_a_torch_table_loads_as_a_spec_relative_to_the_file(tmp_path: Path) -> None:
    path = tmp_path / "models.toml"
    path.write_text(GOOD)
    (spec,) = load_any(path)
    assert isinstance(spec, TorchSpec)
    assert spec.factory == "nets/resnet.py:build" and spec.base_dir == str(tmp_path)
    assert [(s.shape, s.dtype) for s in spec.input_shapes] == [
        ((3, 224, 224), "float32"),
        ((8,), "int64"),
    ]
    assert (spec.mode, spec.optimizer, spec.batch_size, spec.precision) == (
        "train",
        "sgd",
        16,
        "amp_bf16",
    )
    # nets/resnet.py does not exist: loading the file neither imported nor ran it
    assert not (tmp_path / "nets").exists()


@pytest.mark.parametrize(
    ("line", "says"),
    [
        ('torch = "resnet.py"', "torch: 'resnet.py' must be FILE.py:CALLABLE"),
        ('input_shape = ["3,x,224"]', "input_shape: '3,x,224' is not a shape"),
        ('input_shape = ["3:complex"]', "dtype 'complex' is not one of"),
        ('mode = "generate"', "mode: must be one of train, inference, eval"),
        ("batch_size = 0", "batch_size: must be an integer"),
        ('precision = "int8"', "precision: a torch model is traced in"),
        ("layers = []", "unknown key 'layers'"),
    ],
)
def test_a_bad_key_is_one_line_naming_the_model(tmp_path: Path, line: str, says: str) -> None:
    key = line.split(" ")[0]
    text = (
        "\n".join(kept for kept in GOOD.splitlines() if not kept.startswith(key + " "))
        + "\n"
        + line
        + "\n"
    )
    path = tmp_path / "models.toml"
    path.write_text(text)
    with pytest.raises(UserError) as err:
        load_any(path)
    message = str(err.value)
    assert "model 'resnet'" in message and says in message and "\n" not in message
