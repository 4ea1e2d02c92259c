"""models TOML tables of kind = "transformer"."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from gputui.core.errors import UserError
from gputui.fit.importers.hf import load_path
from gputui.fit.importers.transformer_table import from_model_table

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[3]

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


TRAIN = """
[[model]]
name = "inline"
kind = "transformer"
mode = "train"
config = { model_type = "llama", hidden_size = 4096, num_hidden_layers = 32, num_attention_heads = 32, num_key_value_heads = 8, intermediate_size = 14336, vocab_size = 128256 }
"""


@pytest.mark.parametrize(
    ("line", "field"),
    [
        (f"lora_alpha = {'9' * 400}", "lora_alpha"),
        ("lora_alpha = nan", "lora_alpha"),
        ("lora_alpha = -inf", "lora_alpha"),
        ("lora_alpha = [1]", "lora_alpha"),
        ("lora_targets = [16]", "lora_targets"),
        ('lora_targets = "q_proj"', "lora_targets"),
        ("lora_targets = []", "lora_targets"),
        (f"lora_targets = [{', '.join(['1'] * 100)}]", "lora_targets"),
        ('lora_targets = [["q"]]', "lora_targets"),
        (f'lora_targets = ["{"q" * 5000}"]', "lora_targets"),
        ("weights = 4", "weights"),
        ('weights = ["bf16"]', "weights"),
        (f'weights = "{"x" * 5000}"', "weights"),
        ("precision = 1979-05-27", "precision"),
        (f'optimizer = "{"a" * 5000}"', "optimizer"),
        ("grad_checkpointing = 1", "grad_checkpointing"),
        (f"grad_accum = {'9' * 400}", "grad_accum"),
    ],
)
def test_hostile_values_are_one_line_naming_file_and_field(
    tmp_path: Path, line: str, field: str
) -> None:
    from gputui.fit.importers.modelsfile import load_models

    path = tmp_path / "models.toml"
    path.write_text(TRAIN + line + "\n")
    with pytest.raises(UserError) as err:
        load_models(path)
    message = str(err.value)
    assert "\n" not in message and len(message) < 400, message
    assert "models.toml" in message and f"{field}:" in message, message


def test_generate_tables_check_the_kv_dtype_type(tmp_path: Path) -> None:
    from gputui.fit.importers.modelsfile import load_models

    path = tmp_path / "models.toml"
    path.write_text(TRAIN.replace('mode = "train"', 'mode = "generate"\nkv_dtype = 8'))
    with pytest.raises(UserError, match=r"kv_dtype: must be a string"):
        load_models(path)
