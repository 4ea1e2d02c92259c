"""models TOML tables of kind = "transformer"."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from gputui.core.errors import UserError
from gputui.fit.importers.hf import load_path
from gputui.fit.transformer import from_model_table

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]

TOML = """
[[model]]
name = "llama3"
kind = "transformer"
hf_config = "llm/llama-3-8b.json"
mode = "train"
method = "lora"
seq_len = 4096

[[model]]
name = "inline"
kind = "transformer"
mode = "generate"
config = { model_type = "llama", hidden_size = 4096, num_hidden_layers = 32, num_attention_heads = 32, num_key_value_heads = 8, intermediate_size = 14336, vocab_size = 128256 }
"""


def test_path_and_inline_configs() -> None:
    tables = tomllib.loads(TOML)["model"]
    a = from_model_table(tables[0], "models.toml, model 'llama3'", ROOT / "examples", load_path)
    b = from_model_table(tables[1], "models.toml, model 'inline'")
    assert a.model.params == b.model.params == 8_030_261_248
    assert a.workload.mode == "train" and a.workload.method == "lora" and a.workload.seq_len == 4096
    assert b.workload.mode == "generate"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"seq_len": 0}, "seq_len: must be a positive integer"),
        ({"mode": "serve"}, "mode: must be one of"),
        ({"colour": "red"}, "colour: unknown key"),
        (
            {"config": {"model_type": "llama", "hidden_size": None}},
            "config.hidden_size: is required",
        ),
    ],
)
def test_bad_tables_name_the_key(change: dict, message: str) -> None:
    table = {**tomllib.loads(TOML)["model"][1], **change}
    with pytest.raises(UserError, match=message) as err:
        from_model_table(table, "models.toml, model 'inline'")
    assert str(err.value).startswith("models.toml, model 'inline': ")
