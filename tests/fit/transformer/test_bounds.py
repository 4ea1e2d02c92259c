"""fit.llm.bounds: every size bounded, every cross-field rule, at the one choke point.

Each importer ends in a TransformerConfig (checked as it is built) and a
TransformerModel (its counts checked), so the tests go through the importers
users reach (config.json, folder, GGUF, models TOML) and through the
constructors themselves, which no importer can skip. Values sit just over
their bound: the old code accepted them quickly instead of hanging.
"""

from __future__ import annotations

import importlib.util
import json
import struct
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from gputui.core.errors import UserError
from gputui.fit.importers.gguf import load_gguf
from gputui.fit.importers.hf import load_cached, load_folder, load_path
from gputui.fit.importers.hfkeys import from_hf_dict
from gputui.fit.importers.transformer_table import from_model_table
from gputui.fit.transformer.config import ConfigError, Moe
from gputui.fit.transformer.model import TransformerModel, from_config

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "examples" / "llm"
TINY: dict[str, Any] = {
    "model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
    "num_key_value_heads": 2, "intermediate_size": 128, "vocab_size": 256,
    "max_position_embeddings": 2048,
}  # fmt: skip
MIXTRAL = {**TINY, "model_type": "mixtral", "num_local_experts": 8, "num_experts_per_tok": 2}
QWEN_MOE = {**TINY, "model_type": "qwen2_moe", "num_experts": 8, "num_experts_per_tok": 2,
            "moe_intermediate_size": 32, "shared_expert_intermediate_size": 64}  # fmt: skip
DEEPSEEK = json.loads((EXAMPLES / "deepseek-v3.json").read_text())
GEMMA2 = json.loads((EXAMPLES / "gemma-2-9b.json").read_text())
GEMMA3 = json.loads((EXAMPLES / "gemma-3-1b.json").read_text())
GPT2 = {"model_type": "gpt2", "n_embd": 64, "n_layer": 2, "n_head": 4, "n_positions": 128,
        "vocab_size": 100}  # fmt: skip
BERT = json.loads((EXAMPLES / "bert-base-uncased.json").read_text())


def refused(raw: dict[str, Any]) -> str:
    with pytest.raises(ConfigError) as info:
        from_hf_dict(raw)
    return str(info.value)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({**TINY, "num_hidden_layers": 2049}, "num_hidden_layers: 2049 is over the bound 2048"),
        ({**GPT2, "n_layer": 5000}, "n_layer: 5000 is over the bound 2048"),
        ({**TINY, "hidden_size": 262144}, "hidden_size: 262144 is over the bound 131072"),
        ({**TINY, "num_attention_heads": 4096, "head_dim": 1, "num_key_value_heads": 1},
         "num_attention_heads: 4096 is over the bound 2048"),
        ({**TINY, "num_attention_heads": 2, "num_key_value_heads": 4096},
         "num_key_value_heads: 4096 is over the bound 2048"),
        ({**TINY, "head_dim": 8192}, "head_dim: 8192 is over the bound 4096"),
        ({**TINY, "intermediate_size": 1 << 20}, "intermediate_size: 1048576 is over the bound 524288"),
        ({**TINY, "vocab_size": 1 << 23}, "vocab_size: 8388608 is over the bound 4194304"),
        ({**TINY, "max_position_embeddings": 1 << 28},
         "max_position_embeddings: 268435456 is over the bound 134217728"),
        ({**MIXTRAL, "num_local_experts": 5000}, "num_local_experts: 5000 is over the bound 4096"),
        ({**QWEN_MOE, "num_experts": 5000}, "num_experts: 5000 is over the bound 4096"),
        ({**QWEN_MOE, "moe_intermediate_size": 1 << 20},
         "moe_intermediate_size: 1048576 is over the bound 524288"),
        ({**DEEPSEEK, "kv_lora_rank": 1 << 17}, "kv_lora_rank: 131072 is over the bound 65536"),
        ({**DEEPSEEK, "q_lora_rank": 1 << 17}, "q_lora_rank: 131072 is over the bound 65536"),
        ({**DEEPSEEK, "qk_rope_head_dim": 5000}, "qk_rope_head_dim: 5000 is over the bound 4096"),
        ({**DEEPSEEK, "n_shared_experts": 300},
         "n_shared_experts: 614400 shared-expert width (x moe_intermediate_size) is over the bound"),
        ({**TINY, "model_type": "mistral", "sliding_window": 1 << 28},
         "sliding_window: 268435456 is over the bound 134217728"),
        ({**BERT, "type_vocab_size": 2000}, "type_vocab_size: 2000 is over the bound 1024"),
        ({**GEMMA3, "sliding_window_pattern": 5000},
         "sliding_window_pattern: 5000 is over the bound 2048"),
        ({**TINY, "num_hidden_layers": 10**40},
         "num_hidden_layers: an integer of 41 digits is over the bound 2048"),
    ],
)  # fmt: skip
def test_every_size_has_a_bound_named_with_its_key(raw: dict[str, Any], message: str) -> None:
    assert message in refused(raw)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({**MIXTRAL, "num_experts_per_tok": 9},
         "num_experts_per_tok: 9 is more than the 8 experts (num_local_experts)"),
        ({**QWEN_MOE, "num_experts_per_tok": 9},
         "num_experts_per_tok: 9 is more than the 8 experts (num_experts)"),
        ({**DEEPSEEK, "num_experts_per_tok": 257},
         "num_experts_per_tok: 257 is more than the 256 experts (n_routed_experts)"),
        ({**GEMMA2, "layer_types": GEMMA2["layer_types"][:-1]},
         "layer_types: has 41 entries for num_hidden_layers 42"),
        ({**QWEN_MOE, "mlp_only_layers": [True]}, "mlp_only_layers: layer index True is not in 0..1"),
        ({**QWEN_MOE, "mlp_only_layers": [7]}, "mlp_only_layers: layer index 7 is not in 0..1"),
        ({**QWEN_MOE, "mlp_only_layers": list(range(100_000))},
         "mlp_only_layers: must be a list of at most 2 layer indices"),
        ({**GPT2, "n_head": 3, "head_dim": 21}, "n_head: 3 does not divide n_embd 64"),
        ({**TINY, "attention_dropout": float("nan")}, "attention_dropout: must be a finite number"),
        ({**TINY, "attention_dropout": 1.5}, "attention_dropout: must be a probability"),
        ({**TINY, "quantization_config": {"quant_method": "bitsandbytes", "load_in_4bit": True,
                                          "bnb_4bit_quant_type": "xyz"}},
         "quantization_config.bnb_4bit_quant_type: must be nf4 or fp4, got 'xyz'"),
    ],
)  # fmt: skip
def test_cross_field_rules(raw: dict[str, Any], message: str) -> None:
    assert message in refused(raw)


def test_a_multimodal_text_config_names_the_nested_key() -> None:
    raw = {"model_type": "llava", "text_config": {**MIXTRAL, "num_experts_per_tok": 9}}
    assert refused(raw).startswith("text_config.num_experts_per_tok: 9 is more than")
    raw = {"model_type": "llava", "text_config": {**TINY, "vocab_size": 1 << 23}}
    assert refused(raw).startswith("text_config.vocab_size: 8388608 is over the bound")


def test_no_transformer_config_escapes_the_check() -> None:
    """Built directly (not through an importer), a config is checked all the same."""
    good = from_hf_dict(TINY)
    cases = [
        ({"num_layers": 5000}, "num_hidden_layers: 5000 is over the bound 2048"),
        ({"num_kv_heads": 3}, "num_key_value_heads: 3 does not divide num_attention_heads 4"),
        ({"sliding_window": 16, "layer_types": ("sliding",)}, "layer_types: has 1 entries for 2"),
        ({"layer_types": ("sliding", "global")}, "layer_types: unknown layer type 'global'"),
        ({"moe": Moe(4, 5, 32)}, "num_experts_per_tok: 5 is more than the 4 experts"),
        ({"moe": Moe(4, 2, 32, dense_layers=(9,))}, "mlp_only_layers: a layer index outside"),
        ({"head_dim": 0}, "head_dim: must be >= 1, got 0"),
        ({"vocab_size": 2.5}, "vocab_size: must be an integer, got 2.5"),
        ({"hidden_dropout": -0.5}, "hidden_dropout: must be a probability"),
        ({"learned_positions": 1 << 30}, "max_position_embeddings: 1073741824 is over the bound"),
    ]
    for change, message in cases:
        with pytest.raises(ConfigError, match=message.replace("(", r"\(")):
            replace(good, **change)
    with pytest.raises(ConfigError, match="text_config.num_hidden_layers: 5000 is over"):
        replace(good, num_layers=5000, key_prefix="text_config.")


def test_the_products_are_bounded_too(tmp_path: Path) -> None:
    """Each size within its bound, their product (the parameters) not: refused, file named."""
    big = {**TINY, "num_hidden_layers": 2048, "hidden_size": 65536, "num_attention_heads": 512,
           "num_key_value_heads": 512, "intermediate_size": 262144}  # fmt: skip
    path = tmp_path / "config.json"
    path.write_text(json.dumps(big))
    with pytest.raises(UserError, match=r"config\.json: parameters: [\d,]+ is over the bound"):
        load_path(path)
    m = from_config(from_hf_dict(TINY), "tiny", "tiny.json")
    with pytest.raises(UserError, match=r"tiny\.json: parameters in the checkpoint: .* over"):
        TransformerModel(m.name, m.config, m.layout, m.source, exact_params=1 << 50)
    with pytest.raises(UserError, match=r"tiny\.json: bytes of stored weights: .* over the bound"):
        TransformerModel(m.name, m.config, m.layout, m.source, stored_bytes=1 << 60)


def test_safetensors_counts_over_the_bound_are_refused(tmp_path: Path) -> None:
    """A header claiming 2**48 parameters (no data behind it: gputui reads headers only)."""
    folder = tmp_path / "huge"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(TINY))
    size = 2 * (1 << 48)
    header = json.dumps({"w": {"dtype": "BF16", "shape": [1 << 24, 1 << 24],
                               "data_offsets": [0, size]}}).encode()  # fmt: skip
    (folder / "model.safetensors").write_bytes(struct.pack("<Q", len(header)) + header)
    # refused by the bound on parameters (or, where the reader checks it, by the file size)
    with pytest.raises(UserError, match="huge"):
        load_folder(folder)


def _gguf_writer() -> Any:
    spec = importlib.util.spec_from_file_location(
        "mk", ROOT / "tests/fixtures/gguf/make_tiny_gguf.py"
    )
    assert spec and spec.loader
    mk = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mk)
    return mk


@pytest.mark.parametrize(
    ("change", "message"),
    [
        # the tensor table's rules see these first, naming the GGUF key
        ({"llama.block_count": 5000}, "GGUF llama.block_count: 5,000 blocks"),
        ({"llama.expert_count": 4, "llama.expert_used_count": 6},
         "GGUF llama.expert_used_count: 6 experts per token, more than llama.expert_count 4"),
        # the description's bounds, naming the GGUF key and the HF key it maps to
        ({"llama.context_length": 1 << 30},
         r"metadata: llama\.context_length \(max_position_embeddings\): 1073741824 is over "
         "the bound"),
    ],
)  # fmt: skip
def test_gguf_metadata_goes_through_the_same_bounds(
    tmp_path: Path, change: dict[str, int], message: str
) -> None:
    mk = _gguf_writer()
    meta, tensors = mk.tiny_llama()
    path = tmp_path / "bad.gguf"
    mk.write_gguf(path, {**meta, **change}, tensors)
    with pytest.raises(UserError, match=r"bad\.gguf: " + message):
        load_gguf(path)


def test_a_models_toml_config_goes_through_the_same_bounds() -> None:
    raw = {"name": "t", "kind": "transformer", "config": {**TINY, "num_hidden_layers": 5000}}
    with pytest.raises(UserError, match="m.toml: config.num_hidden_layers: 5000 is over the bound"):
        from_model_table(raw, "m.toml")
    raw = {"name": "t", "kind": "transformer", "config": TINY, "batch_size": 1 << 21}
    with pytest.raises(UserError, match="m.toml: batch_size: 2097152 is over the bound 1048576"):
        from_model_table(raw, "m.toml")


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.json")), ids=lambda p: p.stem)
def test_every_real_config_is_within_the_bounds(path: Path) -> None:
    """The shipped configs (DeepSeek-V3's 256 experts, Llama-3-70B, Gemma) are all accepted."""
    m = load_path(path)
    assert m.params > 0


def test_hf_cache_refs_main_must_name_a_snapshot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """refs/main is read from the cache: "../.." or bytes that are not text do not lead
    out of the snapshots folder nor crash; the newest snapshot is used instead."""
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    repo = tmp_path / "hub" / "models--acme--tiny"
    snap = repo / "snapshots" / "abc123"
    snap.mkdir(parents=True)
    (snap / "config.json").write_text(json.dumps(TINY))
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "config.json").write_text(json.dumps({**TINY, "num_hidden_layers": 7}))
    (repo / "refs").mkdir()
    for ref in (b"../../../outside", b"\xff\xfe\x00", b"." * 300):
        (repo / "refs" / "main").write_bytes(ref)
        assert load_cached("acme/tiny").config.num_layers == 2


def test_gguf_messages_can_name_the_gguf_key() -> None:
    """For importers/gguf.py: the metadata key a GGUF user knows, beside the HF one."""
    from gputui.fit.importers.ggufnames import gguf_message

    raw = {**MIXTRAL, "num_experts_per_tok": 9}
    with pytest.raises(ConfigError) as info:
        from_hf_dict(raw)
    assert gguf_message(info.value, "llama") == (
        "llama.expert_used_count (num_experts_per_tok): 9 is more than the 8 experts "
        "(llama.expert_count)"
    )
    with pytest.raises(ConfigError) as info:
        from_hf_dict({**TINY, "num_hidden_layers": 5000})
    assert gguf_message(info.value, "qwen2").startswith(
        "qwen2.block_count (num_hidden_layers): 5000 is over the bound 2048"
    )
    with pytest.raises(ConfigError) as info:
        from_hf_dict({**TINY, "attention_dropout": 2.0})
    assert gguf_message(info.value, "llama").startswith("attention_dropout: must be")
