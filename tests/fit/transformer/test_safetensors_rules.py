"""safetensors headers that cannot describe their file are refused, naming the tensor and field.

Before these rules each case was accepted (counting parameters the file does not
hold), or a RecursionError / ValueError traceback.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import pytest

from gputui.cli import main
from gputui.fit.importers.safetensors import SafetensorsError, read_header, write_header_only

W = {"dtype": "F16", "shape": [4, 8], "data_offsets": [0, 64]}
B = {"dtype": "F32", "shape": [8], "data_offsets": [64, 96]}


def file_of(tmp_path: Path, header: Any, data: int = 96, length: int | None = None) -> Path:
    """A safetensors file with this header (a dict, or raw JSON text) and `data` bytes after it."""
    raw = (header if isinstance(header, str) else json.dumps(header)).encode()
    path = tmp_path / "m.safetensors"
    path.write_bytes(struct.pack("<Q", len(raw) if length is None else length) + raw + bytes(data))
    return path


def refused(path: Path, *fragments: str) -> str:
    with pytest.raises(SafetensorsError) as info:
        read_header(path)
    message = str(info.value)
    assert "\n" not in message
    for fragment in fragments:
        assert fragment in message, message
    return message


def test_a_valid_header_is_read(tmp_path: Path) -> None:
    got = read_header(file_of(tmp_path, {"w": W, "b": B, "__metadata__": {"format": "pt"}}))
    assert [(t.name, t.nbytes, t.elements) for t in got] == [("w", 64, 32), ("b", 32, 8)]


def test_the_header_length_is_bounded_by_the_file(tmp_path: Path) -> None:
    refused(file_of(tmp_path, {"w": W}, length=5000), "header length 5,000", "at most")


def test_header_depth_is_bounded(tmp_path: Path) -> None:
    deep = '{"w": {"dtype": "F16", "shape": [4, 8], "data_offsets": [0, 64], "x": ' + "[" * 50_000
    refused(
        file_of(tmp_path, deep + "]" * 50_000 + "}}"), "header is not JSON", "nested more than 3"
    )


def test_a_huge_integer_is_one_line(tmp_path: Path) -> None:
    refused(file_of(tmp_path, '{"w": {"dtype": "F16", "shape": [' + "9" * 5000 + "]}}"), "digits")


@pytest.mark.parametrize("shape", [[4, True], [1] * 9, [2**49, 0]])
def test_shapes_are_lists_of_non_negative_integers(tmp_path: Path, shape: Any) -> None:
    refused(file_of(tmp_path, {"w": {**W, "shape": shape}}), "tensor 'w': shape")


@pytest.mark.parametrize("offsets", [[0, True], [-64, 0], [False, 64]])
def test_data_offsets_are_two_ordered_integers(tmp_path: Path, offsets: Any) -> None:
    refused(file_of(tmp_path, {"w": {**W, "data_offsets": offsets}}), "tensor 'w': data_offsets")


@pytest.mark.parametrize(
    "entry",
    [
        {**W, "shape": [4, -8]}, {**W, "shape": [4, 8.0]}, {**W, "shape": "4x8"},
        {**W, "data_offsets": [0.0, 64]}, {**W, "data_offsets": [0]}, {**W, "data_offsets": [64, 0]},
    ],
)  # fmt: skip
def test_forms_refused_before_stay_refused(tmp_path: Path, entry: Any) -> None:
    refused(file_of(tmp_path, {"w": entry}), "tensor 'w'")


def test_data_offsets_inside_the_data_section(tmp_path: Path) -> None:
    refused(file_of(tmp_path, {"w": W, "b": B}, data=90), "'b'", "[64, 96] outside", "90")


def test_data_offsets_do_not_overlap(tmp_path: Path) -> None:
    c = {**B, "data_offsets": [48, 80]}
    refused(file_of(tmp_path, {"w": W, "c": c}), "overlap")


def test_data_offsets_span_dtype_size_times_elements(tmp_path: Path) -> None:
    refused(file_of(tmp_path, {"w": {**W, "dtype": "F32"}}), "tensor 'w'", "64 bytes", "F32")
    refused(file_of(tmp_path, {"w": {**W, "shape": [4, 9]}}), "tensor 'w'", "72")


def test_an_unknown_dtype_is_refused(tmp_path: Path) -> None:
    refused(file_of(tmp_path, {"w": {**W, "dtype": ["F16"]}}), "unknown dtype")  # was a TypeError
    refused(file_of(tmp_path, {"w": {**W, "dtype": "F12"}}), "unknown dtype 'F12'")


@pytest.mark.parametrize("meta", [["a"], {"a": 1}, {"a": {"b": "c"}}, "text"])
def test_metadata_is_an_object_of_strings(tmp_path: Path, meta: Any) -> None:
    refused(file_of(tmp_path, {"w": W, "__metadata__": meta}), "__metadata__")


def test_the_cli_names_the_file_and_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "tiny"
    folder.mkdir()
    config = Path(__file__).resolve().parents[3] / "examples" / "llm" / "llama-3-8b.json"
    (folder / "config.json").write_text(config.read_text())
    write_header_only(folder / "a.safetensors", {"w": ("F16", (4, 8))})
    path = folder / "b.safetensors"
    path.write_bytes(file_of(tmp_path, {"w": {**W, "data_offsets": [0, 10**9]}}).read_bytes())
    assert main(["fit", str(folder), "--gpu", "RTX 3090"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "b.safetensors: tensor 'w': data_offsets" in err
