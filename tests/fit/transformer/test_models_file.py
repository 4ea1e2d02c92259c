"""`kind = "transformer"` tables in a models TOML: the one loader, and `gputui fit` on a file
that mixes layer models and transformers (text, JSON, exit codes, overrides, bad tables)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from gputui.core.errors import UserError
from gputui.fit.importers.modelsfile import ModelSpec, load_models, parse_models
from gputui.fit.transformer import TransformerSpec
from tests.conftest import run_fit

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "examples" / "models.toml"

MIXED = """
[[model]]
name = "mlp"
input_shape = [16]
batch_size = 8
layers = [ { type = "Dense", units = 4 } ]

[[model]]
name = "llama3-lora"
kind = "transformer"
hf_config = "llm/llama-3-8b.json"
mode = "train"
lora_rank = 16
seq_len = 1024

[[model]]
name = "gpt2"
kind = "transformer"
batch_size = 4
seq_len = 256
new_tokens = 64
config = { model_type = "gpt2", n_embd = 768, n_layer = 12, n_head = 12, n_positions = 1024, vocab_size = 50257 }
"""


@pytest.fixture
def mixed(tmp_path: Path) -> Path:
    shutil.copytree(ROOT / "examples" / "llm", tmp_path / "llm")
    path = tmp_path / "models.toml"
    path.write_text(MIXED)
    return path


def test_one_loader_reads_both_kinds_in_file_order(mixed: Path) -> None:
    models = load_models(mixed)
    assert [m.name for m in models] == ["mlp", "llama3-lora", "gpt2"]
    mlp, llama, gpt2 = models
    assert isinstance(mlp, ModelSpec)
    assert isinstance(llama, TransformerSpec) and isinstance(gpt2, TransformerSpec)
    # hf_config is relative to the models file, not the working directory
    assert llama.model.params == 8_030_261_248
    # lora_rank alone means LoRA, as --lora-rank does on the command line
    assert llama.workload.method == "lora" and llama.workload.seq_len == 1024
    assert gpt2.model.params == 124_439_808 and gpt2.workload.mode == "generate"
    assert gpt2.workload.batch_size == 4 and gpt2.workload.new_tokens == 64


def test_examples_hold_two_transformers() -> None:
    models = load_models(EXAMPLES)
    tfm = {m.name: m for m in models if isinstance(m, TransformerSpec)}
    assert set(tfm) == {"llama-3-8b-lora", "gpt2-serve"}
    assert tfm["llama-3-8b-lora"].workload.grad_checkpointing
    assert tfm["gpt2-serve"].workload.weights == "fp16"


GPT2 = 'config = { model_type = "gpt2", n_embd = 64, n_layer = 2, n_head = 4, n_positions = 128, vocab_size = 100 }'


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ('mode = "serve"\n' + GPT2, "model 'g': mode: must be one of"),
        ("seq_len = 0\n" + GPT2, "model 'g': seq_len: must be a positive integer"),
        ("seq_len = 4096\n" + GPT2, "model 'g': seq_len: 4096 is beyond the model's learned"),
        ('mode = "inference"\nkv_dtype = "fp8"\n' + GPT2, "model 'g': kv_dtype: only with mode"),
        ('mode = "train"\nweights = "nf4"\nmethod = "full"\n' + GPT2, "model 'g': weights: a full"),
        (
            'mode = "train"\nmethod = "qlora"\nweights = "bf16"\n' + GPT2,
            "model 'g': weights: QLoRA",
        ),
        ('mode = "train"\nlora_rank = 8\nmethod = "full"\n' + GPT2, "model 'g': lora_rank: only"),
        ('colour = "red"\n' + GPT2, "model 'g': colour: unknown key"),
        ('hf_config = "nowhere.json"\n', "nowhere.json"),
        ("", "give exactly one of hf_config"),
        (
            'config = { model_type = "llama", hidden_size = "big" }',
            "model 'g': config.hidden_size: must be",
        ),
    ],
)
def test_bad_tables_one_line_naming_model_and_field(
    body: str, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = f'[[model]]\nname = "g"\nkind = "transformer"\n{body}\n'
    with pytest.raises(UserError, match=message) as err:
        parse_models(text, "m.toml", base=tmp_path)
    assert "\n" not in str(err.value) and str(err.value).startswith("m.toml")
    path = tmp_path / "m.toml"
    path.write_text(text)
    rc, out, errout = run_fit(capsys, str(path), "--gpu", "RTX 4090")
    assert rc == 2 and out == "" and "Traceback" not in errout
    assert len(errout.strip().splitlines()) == 1


def test_mixed_file_text(mixed: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run_fit(capsys, str(mixed), "--gpu", "RTX 4090")
    assert rc == 0
    assert "mlp" in out  # the layer model, by the layer estimator
    assert "model: llama3-lora (llama, 8,030,261,248 params" in out
    assert "train: LoRA r=16 on q,k,v,o (13,631,488 trainable)" in out and "seq 1,024" in out
    assert "generate: bf16 weights, prompt 256 + 64 new tokens, 4 sequence(s)" in out
    assert out.count("longest") >= 2


def test_mixed_file_json_matches_the_single_file_estimate(
    mixed: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rc, out, _ = run_fit(capsys, str(mixed), "--gpu", "RTX 4090", "--json")
    data = json.loads(out)
    assert rc == 0 and data["all_fit"] is True
    assert [(m["name"], m["kind"]) for m in data["models"]] == [
        ("mlp", "graph"),
        ("llama3-lora", "transformer"),
        ("gpt2", "transformer"),
    ]
    by_name = {t["name"]: t for t in data["models"] if t["kind"] == "transformer"}
    assert set(by_name) == {"llama3-lora", "gpt2"}
    llama = by_name["llama3-lora"]
    assert llama["workload"]["method"] == "lora" and llama["workload"]["seq_len"] == 1024
    # the same question asked of the config file directly gives the same answer
    rc1, single, _ = run_fit(
        capsys, str(mixed.parent / "llm/llama-3-8b.json"), "--mode", "train",
        "--lora-rank", "16", "--seq-len", "1024", "--gpu", "RTX 4090", "--json",
    )  # fmt: skip
    assert rc1 == 0
    (alone,) = json.loads(single)["models"]
    assert llama["estimates"][0]["peak_bytes"] == alone["estimates"][0]["peak_bytes"]


def test_flags_override_the_table_and_set_the_exit_status(
    mixed: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rc, out, _ = run_fit(
        capsys, str(mixed), "--model", "llama3-lora", "--seq-len", "16384", "--batch-size", "4",
        "--gpu", "RTX 4090", "--json", "--allow-longer-context",  # Llama-3-8B: context 8192
    )  # fmt: skip
    data = json.loads(out)
    assert rc == 1 and data["all_fit"] is False
    (llama,) = data["models"]
    assert llama["kind"] == "transformer"
    assert llama["workload"]["seq_len"] == 16384 and llama["workload"]["batch_size"] == 4
    assert llama["workload"]["method"] == "lora"  # the table's, not overridden
    assert llama["estimates"][0]["verdict"] == "does not fit"


def test_model_picks_and_mode_checks(mixed: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run_fit(
        capsys, str(mixed), "--model", "gpt2", "--mode", "inference", "--gpu", "T4"
    )
    assert rc == 0 and "inference (one forward, no labels)" in out and "mlp" not in out
    # generate is for transformers: refused while a layer model is chosen
    rc, _, err = run_fit(capsys, str(mixed), "--mode", "generate", "--gpu", "T4")
    assert rc == 2 and "layer model 'mlp'" in err
    # transformer-only flags need a transformer among the chosen models
    rc, _, err = run_fit(capsys, str(mixed), "--model", "mlp", "--seq-len", "8", "--gpu", "T4")
    assert rc == 2 and "none of the models chosen is one" in err


def test_all_cards_ranks_transformers_too(mixed: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run_fit(
        capsys, str(mixed), "--all-cards", "--json", "--model", "mlp", "--model", "gpt2"
    )
    data = json.loads(out)
    assert rc == 0
    mlp, gpt2 = data["models"]
    assert (mlp["name"], mlp["kind"], gpt2["kind"]) == ("mlp", "graph", "transformer")
    assert gpt2["name"] == "gpt2" and any(r["fits"] for r in gpt2["ranking"])
    assert gpt2["ranking"][0]["fits"] and gpt2["ranking"][0]["cards_needed"] == 1
    rc, text, _ = run_fit(capsys, str(mixed), "--all-cards", "--model", "gpt2")
    assert rc == 0 and "cards needed" in text and "decode tok/s" in text


def test_shared_flags_meant_for_layer_models_leave_transformers_alone(
    mixed: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--optimizer rmsprop / --precision tf32 are layer-model values here: the transformers
    keep their tables' settings; asked of a transformer alone they are refused."""
    rc, out, _ = run_fit(
        capsys, str(mixed), "--optimizer", "rmsprop", "--precision", "tf32", "--gpu", "RTX 4090",
        "--json",
    )  # fmt: skip
    data = json.loads(out)
    assert rc == 0 and data["models"][0]["workload"]["optimizer"] == "rmsprop"
    llama = next(t for t in data["models"] if t["name"] == "llama3-lora")
    assert llama["workload"]["optimizer"] == "adamw"
    rc, _, err = run_fit(
        capsys, str(mixed), "--model", "gpt2", "--optimizer", "adam", "--gpu", "T4"
    )
    assert rc == 2 and "--optimizer: only with --mode train" in err
