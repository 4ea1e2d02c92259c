"""Which kind of model file is this? Decided by content, never by extension.

Users name files as they like (`model.json` may be Keras' or Hugging Face's,
a `.keras` archive may have been renamed `.zip`), so the first bytes and the
JSON's top-level keys decide. Nothing here loads weights: a `.keras` archive is
opened with `zipfile` and only its `config.json` is read; a GGUF file is only
checked for its 4-byte magic. Every file is opened through `gputui.core.inputfile`
(special files refused, sizes capped, JSON depth and digits bounded).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, Literal

from gputui.core import inputfile, pathprobe
from gputui.core.errors import UserError
from gputui.core.textsafe import visible

FileKind = Literal[
    "toml", "keras-json", "keras-archive", "hf-config", "hf-folder", "gguf", "safetensors"
]
FILE_KINDS: tuple[FileKind, ...] = (
    "toml",
    "keras-json",
    "keras-archive",
    "hf-config",
    "hf-folder",
    "gguf",
    "safetensors",
)

_GGUF_MAGIC = b"GGUF"
_ZIP_MAGIC = b"PK\x03\x04"
# A Keras 3 .keras archive's model description; weights live beside it and are never read.
ARCHIVE_CONFIG = "config.json"
_HF_CONFIG = "config.json"
_SNIFF_BYTES = 8192
# A JSON file's kind by the digest of its bytes: `gputui fit` asks for a file's kind up to
# three times before its importer reads it, and each answer parsed the whole document
# (seconds for a graph of 10,000 layers). Keyed by content, so an edited file is parsed again.
_JSON_KINDS: dict[bytes, FileKind] = {}
_JSON_KINDS_SIZE = 16


def detect_kind(path: Path) -> FileKind:
    """The kind of model file at `path`, or a one-line `UserError` naming the file."""
    name = visible(str(path))
    if pathprobe.is_dir(path):
        if pathprobe.is_file(path / _HF_CONFIG):
            return "hf-folder"
        raise UserError(
            f"{name}: a folder without {_HF_CONFIG} (expected a Hugging Face model folder)"
        )
    with inputfile.open_regular(path) as handle:
        try:
            head = handle.read(_SNIFF_BYTES)
        except OSError as exc:
            raise UserError(f"{name}: cannot read: {visible(exc.strerror or str(exc))}") from None
        size = inputfile.file_size(handle)
    if head.startswith(_GGUF_MAGIC):
        return "gguf"
    if head.startswith(_ZIP_MAGIC):
        read_archive_config(path)  # raises unless it is a Keras archive
        return "keras-archive"
    if _is_safetensors(head, size):
        return "safetensors"
    if b"\x00" in head:
        raise UserError(
            f"{name}: not a models TOML, Keras JSON or .keras archive, Hugging Face config "
            "or GGUF file (binary content)"
        )
    text = head.decode("utf-8-sig", errors="replace").lstrip()
    if text.startswith("{"):  # no TOML document starts with a brace
        return _json_file_kind(path, name)
    if text.startswith("["):
        # A TOML [table] header, or a JSON array (which is no model file of ours).
        if size > inputfile.JSON_CAP:
            return "toml"  # the models loader refuses it by its size
        try:
            data = inputfile.parse_json(inputfile.read_capped(path, inputfile.JSON_CAP), name)
        except UserError:
            return "toml"
        return json_kind(data, name)
    return "toml"


def _is_safetensors(head: bytes, size: int) -> bool:
    """safetensors' layout: a little-endian u64 header length, then the JSON header."""
    if len(head) < 9 or head[8:9] != b"{":
        return False
    return 2 <= int.from_bytes(head[:8], "little") <= size - 8


def _json_file_kind(path: Path, name: str) -> FileKind:
    """json_kind of the file, read as read_json reads it (same caps and errors), parsed
    once per content."""
    raw = inputfile.read_capped(path, inputfile.JSON_CAP, "JSON file")
    digest = hashlib.sha256(raw).digest()
    kind = _JSON_KINDS.get(digest)
    if kind is None:
        kind = json_kind(inputfile.parse_json(raw, inputfile.shown(path)), name)
        if len(_JSON_KINDS) >= _JSON_KINDS_SIZE:
            _JSON_KINDS.clear()
        _JSON_KINDS[digest] = kind
    return kind


def json_kind(data: Any, name: str) -> FileKind:
    """Keras (`class_name` + `config` at the top) or a Hugging Face config (`model_type`)."""
    if isinstance(data, dict):
        if "class_name" in data and "config" in data:
            return "keras-json"
        if "model_type" in data:
            return "hf-config"
    raise UserError(
        f"{name}: JSON is neither a Keras model (top-level class_name and config) "
        "nor a Hugging Face config (model_type)"
    )


def read_json(path: Path) -> Any:
    """The parsed JSON at `path` (size-capped); errors name the file and line."""
    return inputfile.read_json(path)


def parse_json(raw: bytes, name: str) -> Any:
    """Parse JSON bytes, reporting a syntax error as `name:LINE: invalid JSON: ...`."""
    return inputfile.parse_json(raw, name)


def read_archive_config(path: Path) -> dict[str, Any]:
    """The model description inside a Keras 3 `.keras` archive, without touching weights."""
    name = visible(str(path))
    raw = inputfile.read_zip_member(path, ARCHIVE_CONFIG)
    if raw is None:
        raise UserError(f"{name}: a zip archive without {ARCHIVE_CONFIG} (not a .keras model)")
    data = parse_json(raw, f"{name}!{ARCHIVE_CONFIG}")
    if not (isinstance(data, dict) and "class_name" in data and "config" in data):
        raise UserError(
            f"{name}: the archive's {ARCHIVE_CONFIG} is not a Keras model "
            "(no top-level class_name and config)"
        )
    return data
