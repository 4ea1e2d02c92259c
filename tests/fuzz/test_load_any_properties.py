"""The importer registry on arbitrary bytes: `load_any` gives model descriptions or one
`UserError` line, never another exception; bytes shaped like a safetensors header
(a length, then `{`) are told apart by content whatever the file is called."""

from __future__ import annotations

import struct
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from gputui.core.errors import UserError
from gputui.fit import FILE_KINDS, detect_kind, load_any


def _answer(data: bytes, name: str) -> str:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / name
        path.write_bytes(data)
        try:
            kind = detect_kind(path)
            load_any(path)
        except UserError as exc:
            assert "\n" not in str(exc)
            return "refused"
        assert kind in FILE_KINDS
        return kind


@settings(max_examples=150, deadline=None)
@given(data=st.binary(max_size=600), name=st.sampled_from(["m.json", "m.toml", "m.gguf", "x"]))
def test_any_bytes_load_or_are_refused_in_one_line(data: bytes, name: str) -> None:
    _answer(data, name)


@settings(max_examples=100, deadline=None)
@given(header=st.binary(max_size=200), claimed=st.integers(0, 2**64 - 1))
def test_a_safetensors_shaped_file_is_refused_without_its_folder(
    header: bytes, claimed: int
) -> None:
    data = struct.pack("<Q", claimed) + b"{" + header
    assert _answer(data, "weights.bin") == "refused"  # no config.json beside it
