"""GGUF files that cannot be a model are refused with the field or tensor and the bound.

Before these rules each case below was a MemoryError, a hang, a traceback or a
model estimated from a table that contradicts its own metadata.
"""

from __future__ import annotations

import importlib.util
import struct
from pathlib import Path
from typing import Any

import pytest

from gputui.cli import main
from gputui.core.errors import UserError
from gputui.fit.importers.gguf import load_gguf

ROOT = Path(__file__).resolve().parents[3]
_spec = importlib.util.spec_from_file_location("mk", ROOT / "tests/fixtures/gguf/make_tiny_gguf.py")
assert _spec and _spec.loader
mk: Any = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(mk)

Tensors = list[tuple[str, tuple[int, ...], Any]]


def refused(
    tmp_path: Path, meta: dict[str, Any], tensors: Tensors, *fragments: str, **kw: Any
) -> str:
    path = tmp_path / "m.gguf"
    path.write_bytes(mk.gguf_bytes(meta, tensors, **kw))
    with pytest.raises(UserError) as info:
        load_gguf(path)
    message = str(info.value)
    assert "\n" not in message and info.value.exit_code == 2
    assert message.startswith(f"{path}: GGUF "), message
    for fragment in fragments:
        assert fragment in message, message
    return message


def tiny() -> tuple[dict[str, Any], Tensors]:
    meta, tensors = mk.tiny_llama()
    return meta, list(tensors)


def test_the_tiny_file_is_accepted(tmp_path: Path) -> None:
    meta, tensors = tiny()
    path = tmp_path / "m.gguf"
    mk.write_gguf(path, meta, tensors)
    assert load_gguf(path).params == 106_816


def test_an_array_count_past_the_end_of_the_file_is_refused_before_allocating(
    tmp_path: Path,
) -> None:
    meta, tensors = tiny()
    meta["tokenizer.ggml.scores"] = struct.pack("<IIQ", 9, 6, 2**25)  # 2^25 f32, no data
    refused(
        tmp_path, meta, tensors, "tokenizer.ggml.scores", "33,554,432 entries", "left in the file"
    )


def test_a_string_array_count_past_the_end_is_refused(tmp_path: Path) -> None:
    meta, tensors = tiny()
    meta["tokenizer.ggml.merges"] = struct.pack("<IIQ", 9, 8, 2**40)
    refused(tmp_path, meta, tensors, "tokenizer.ggml.merges", "entries")


def test_a_tensor_count_past_the_end_is_refused(tmp_path: Path) -> None:
    meta, tensors = tiny()
    refused(tmp_path, meta, tensors, "tensor_count", n_tensors=2**40)


def test_a_huge_block_count_is_refused_not_a_hang(tmp_path: Path) -> None:
    meta, tensors = tiny()
    meta["llama.block_count"] = 2**31
    refused(tmp_path, meta, tensors, "llama.block_count", "2,147,483,648 blocks", "21 tensors")


def test_token_embd_must_match_embedding_length(tmp_path: Path) -> None:
    meta, tensors = tiny()
    meta["llama.embedding_length"] = 96
    refused(tmp_path, meta, tensors, "token_embd.weight", "[64, 256]", "[96, 256]")


def test_token_embd_must_match_the_vocab(tmp_path: Path) -> None:
    meta, tensors = tiny()
    meta["tokenizer.ggml.tokens"] = [f"t{i}" for i in range(300)]
    refused(tmp_path, meta, tensors, "token_embd.weight", "[64, 300]")


def test_a_tensor_listed_twice_is_refused(tmp_path: Path) -> None:
    meta, tensors = tiny()
    tensors.insert(5, tensors[3])
    refused(tmp_path, meta, tensors, f"tensor {tensors[3][0]}: listed twice")


def test_a_block_without_tensors_is_refused(tmp_path: Path) -> None:
    meta, tensors = tiny()
    meta["llama.block_count"] = 3
    refused(tmp_path, meta, tensors, "blk.2.*", "no tensors")


def test_a_block_past_block_count_is_refused(tmp_path: Path) -> None:
    meta, tensors = tiny()
    meta["llama.block_count"] = 1
    refused(tmp_path, meta, tensors, "blk.1.", "block 1", "block_count is 1")


def test_a_block_missing_one_tensor_is_refused(tmp_path: Path) -> None:
    meta, tensors = tiny()
    tensors = [t for t in tensors if t[0] != "blk.1.attn_k.weight"]
    refused(tmp_path, meta, tensors, "blk.1.attn_k.weight: missing")


def test_quantized_rows_must_be_whole_blocks(tmp_path: Path) -> None:
    meta, tensors = tiny()
    tensors[0] = ("token_embd.weight", (48, 256), "Q8_0")  # 48 is not a multiple of 32
    meta["llama.embedding_length"] = 48
    refused(tmp_path, meta, tensors, "token_embd.weight", "48", "Q8_0 blocks (32)")


@pytest.mark.parametrize("dim", [0, 2**40])
def test_dims_are_non_zero_and_bounded(tmp_path: Path, dim: int) -> None:
    meta, tensors = tiny()
    tensors[1] = ("blk.0.attn_norm.weight", (dim,), "F32")
    refused(tmp_path, meta, tensors, "blk.0.attn_norm.weight: dims[0]", "1 to 2,147,483,647",
            data_bytes=0)  # fmt: skip


def test_tensor_data_past_the_end_of_the_file_is_refused(tmp_path: Path) -> None:
    meta, tensors = tiny()
    refused(tmp_path, meta, tensors, "token_embd.weight", "truncated", data_bytes=1000)


def test_misaligned_data_offsets_are_refused(tmp_path: Path) -> None:
    meta, tensors = tiny()
    offsets = [i * 40_000 + (7 if i == 3 else 0) for i in range(len(tensors))]
    refused(tmp_path, meta, tensors, f"{tensors[3][0]}: data offset", "multiple of 32",
            offsets=offsets, data_bytes=len(tensors) * 40_000)  # fmt: skip


def test_overlapping_tensor_data_is_refused(tmp_path: Path) -> None:
    meta, tensors = tiny()
    offsets = [0] * len(tensors)
    refused(tmp_path, meta, tensors, "overlaps", offsets=offsets)


def test_more_experts_used_than_there_are_is_refused(tmp_path: Path) -> None:
    meta, tensors = tiny()
    meta["llama.expert_count"] = 4
    meta["llama.expert_used_count"] = 8
    refused(tmp_path, meta, tensors, "llama.expert_used_count", "8", "expert_count 4")


def test_kv_heads_must_divide_heads(tmp_path: Path) -> None:
    meta, tensors = tiny()
    meta["llama.attention.head_count_kv"] = 3
    refused(tmp_path, meta, tensors, "head_count_kv", "3 does not divide", "4")


def test_a_metadata_key_given_twice_is_refused(tmp_path: Path) -> None:
    meta, tensors = tiny()
    raw = mk.gguf_bytes(meta, tensors, n_kv=len(meta) + 1)
    dup = mk._string("llama.block_count") + mk._value(2)
    at = 24  # right after magic, version and the two counts
    path = tmp_path / "m.gguf"
    path.write_bytes(raw[:at] + dup + raw[at:])
    with pytest.raises(UserError, match="llama.block_count: metadata key given twice"):
        load_gguf(path)


def test_the_cli_prints_one_line_and_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    meta, tensors = tiny()
    meta["llama.block_count"] = 2**31
    path = tmp_path / "m.gguf"
    mk.write_gguf(path, meta, tensors)
    assert main(["fit", str(path), "--gpu", "RTX 3090"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "GGUF llama.block_count" in err
