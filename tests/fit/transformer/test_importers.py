"""Safetensors headers, HF folders and cache, quantization_config, GGUF headers."""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path

import pytest

from gputui.core.errors import UserError
from gputui.fit.importers.gguf import load_gguf, read_gguf
from gputui.fit.importers.hf import cached_snapshot, load_cached, load_folder, load_path
from gputui.fit.importers.safetensors import SafetensorsError, read_header, write_header_only

ROOT = Path(__file__).resolve().parents[3]
GGUF = ROOT / "tests/fixtures/gguf/tiny-llama-q8_0.gguf"
TINY = {
    "model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
    "num_key_value_heads": 2, "intermediate_size": 128, "vocab_size": 256,
    "max_position_embeddings": 2048, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
}  # fmt: skip


def tiny_tensors(dtype: str = "BF16") -> dict[str, tuple[str, tuple[int, ...]]]:
    t = {"model.embed_tokens.weight": (dtype, (256, 64)), "lm_head.weight": (dtype, (256, 64)),
         "model.norm.weight": (dtype, (64,))}  # fmt: skip
    for i in range(2):
        p = f"model.layers.{i}."
        t |= {
            p + "self_attn.q_proj.weight": (dtype, (64, 64)),
            p + "self_attn.k_proj.weight": (dtype, (32, 64)),
            p + "self_attn.v_proj.weight": (dtype, (32, 64)),
            p + "self_attn.o_proj.weight": (dtype, (64, 64)),
            p + "mlp.gate_proj.weight": (dtype, (128, 64)),
            p + "mlp.up_proj.weight": (dtype, (128, 64)),
            p + "mlp.down_proj.weight": (dtype, (64, 128)),
            p + "input_layernorm.weight": (dtype, (64,)),
            p + "post_attention_layernorm.weight": (dtype, (64,)),
        }
    return t


def make_folder(tmp: Path, config: dict | None = None, shards: int = 2) -> Path:
    folder = tmp / "tiny-llama"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(config or TINY))
    items = list(tiny_tensors().items())
    for s in range(shards):
        part = dict(items[s::shards])
        write_header_only(folder / f"model-0000{s + 1}-of-0000{shards}.safetensors", part)
    return folder


def test_folder_counts_parameters_and_bytes_from_headers(tmp_path: Path) -> None:
    m = load_folder(make_folder(tmp_path))
    assert m.params == m.layout.params == 106_816
    assert m.stored_bytes == 2 * 106_816
    assert m.stored_format == "bf16" and m.stored_dtypes == {"BF16": 106_816}
    assert m.kind == "hf-folder"


def test_header_is_read_not_the_weights(tmp_path: Path) -> None:
    f = tmp_path / "x.safetensors"  # 32 GiB of weights in a sparse file: never read
    raw = json.dumps({"w": {"dtype": "F16", "shape": [1 << 20, 1 << 14],
                            "data_offsets": [0, 1 << 35]}}).encode()  # fmt: skip
    f.write_bytes(struct.pack("<Q", len(raw)) + raw)
    with f.open("r+b") as fh:
        fh.truncate(8 + len(raw) + (1 << 35))
    (t,) = read_header(f)
    assert t.elements == 1 << 34 and t.nbytes == 1 << 35


def test_weights_cut_short_are_a_truncated_file(tmp_path: Path) -> None:
    f = tmp_path / "x.safetensors"
    write_header_only(f, {"w": ("F16", (1000, 1000))})
    with f.open("r+b") as fh:
        fh.truncate(8 + struct.unpack("<Q", f.read_bytes()[:8])[0])
    with pytest.raises(SafetensorsError, match=r"'w': data_offsets \[0, 2000000\] outside"):
        read_header(f)


def test_a_folder_that_disagrees_with_its_config_warns(tmp_path: Path) -> None:
    cfg = {**TINY, "intermediate_size": 256}
    m = load_folder(make_folder(tmp_path, cfg))
    assert m.params == 106_816 and m.layout.params != m.params
    assert any("safetensors hold" in w for w in m.warnings)


def test_bad_safetensors_names_the_file(tmp_path: Path) -> None:
    folder = make_folder(tmp_path)
    (folder / "broken.safetensors").write_bytes(struct.pack("<Q", 19) + b"{not json at all...")
    with pytest.raises(UserError, match=r"broken\.safetensors: header is not JSON"):
        load_folder(folder)


def test_quantization_config_gptq(tmp_path: Path) -> None:
    cfg = {**TINY, "quantization_config": {"quant_method": "gptq", "bits": 4, "group_size": 128}}
    p = tmp_path / "config.json"
    p.write_text(json.dumps(cfg))
    m = load_path(p)
    assert m.default_weights == "gptq-int4"
    bnb = {**TINY, "quantization_config": {"quant_method": "bitsandbytes", "load_in_4bit": True,
           "bnb_4bit_quant_type": "nf4", "bnb_4bit_use_double_quant": True}}  # fmt: skip
    p.write_text(json.dumps(bnb))
    assert load_path(p).default_weights == "nf4-dq"
    p.write_text(json.dumps({**TINY, "quantization_config": {"quant_method": "magic"}}))
    with pytest.raises(UserError, match="quantization_config.quant_method: unsupported"):
        load_path(p)


def test_invalid_json_names_file_and_line(tmp_path: Path) -> None:
    p = tmp_path / "config.json"
    p.write_text('{\n "model_type": "llama",\n "hidden_size": ,\n}')
    with pytest.raises(UserError, match=r"config\.json:3: invalid JSON"):
        load_path(p)


def test_hf_cache_offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    with pytest.raises(UserError, match="not in the local Hugging Face cache"):
        cached_snapshot("meta-llama/Llama-3-8B")
    repo = tmp_path / "hf" / "hub" / "models--acme--tiny"
    snap = repo / "snapshots" / "abc123"
    snap.mkdir(parents=True)
    shutil.copytree(make_folder(tmp_path), snap, dirs_exist_ok=True)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("abc123")
    m = load_cached("acme/tiny")
    assert m.name == "acme/tiny" and m.params == 106_816
    with pytest.raises(UserError, match="expected ORG/NAME"):
        cached_snapshot("../etc")


def test_gguf_header(tmp_path: Path) -> None:
    g = read_gguf(GGUF)
    assert g.version == 3 and g.metadata["general.architecture"] == "llama"
    assert len(g.metadata["tokenizer.ggml.tokens"]) == 256
    m = load_gguf(GGUF)
    assert m.params == m.layout.params == 106_816
    assert m.stored_format == "gguf-q8_0"
    assert m.stored_bytes == (106_816 - 5 * 64) * 34 // 32 + 5 * 64 * 4
    assert m.config.num_kv_heads == 2 and m.config.max_position_embeddings == 2048


def test_gguf_mixed_types_are_exact(tmp_path: Path) -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "mk", ROOT / "tests/fixtures/gguf/make_tiny_gguf.py"
    )
    assert spec and spec.loader
    mk = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mk)
    meta, tensors = mk.tiny_llama()
    tensors = [(n, d, "F16" if "ffn_down" in n else t) for n, d, t in tensors]
    p = tmp_path / "mixed.gguf"
    mk.write_gguf(p, meta, tensors)
    m = load_gguf(p)
    down = 2 * 128 * 64
    assert m.stored_bytes == (106_816 - 320 - down) * 34 // 32 + 320 * 4 + down * 2


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"GGML\x03\x00\x00\x00", "no GGUF magic"),
        (b"GGUF\x09\x00\x00\x00" + bytes(16), "version 9 is not supported"),
        (GGUF.read_bytes()[:200], "file ends inside its header"),
    ],
)
def test_bad_gguf_is_one_line(tmp_path: Path, data: bytes, message: str) -> None:
    p = tmp_path / "bad.gguf"
    p.write_bytes(data)
    with pytest.raises(UserError, match=message):
        load_gguf(p)
