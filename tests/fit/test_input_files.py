"""The one input boundary (gputui.core.inputfile): special files, size caps, JSON bounds, zip rules.

Each test failed before the boundary existed: a FIFO blocked forever, a huge file
was read whole, deep or long-digit JSON was a traceback, a hostile zip member was
read, a traceback or accepted.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import struct
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from gputui.cli import main
from gputui.core import inputfile
from gputui.core.errors import UserError
from gputui.fit.importers.detect import detect_kind, read_archive_config, read_json
from gputui.fit.importers.gguf import load_gguf
from gputui.fit.importers.hf import load_folder
from gputui.fit.importers.hf import read_json as hf_read_json
from gputui.fit.importers.modelsfile import load_models
from gputui.fit.importers.safetensors import read_header
from gputui.fit.paths import resolve_models_path

KERAS = {"class_name": "Functional", "config": {"name": "m", "layers": []}}
HF = {"model_type": "llama", "hidden_size": 64}
LLAMA = Path(__file__).resolve().parents[2] / "examples" / "llm" / "llama-3-8b.json"


class Blocked(Exception):
    """Not an OSError, so no reader's `except OSError` can turn a hang into a message."""


@contextlib.contextmanager
def no_hang(seconds: float = 5.0) -> Iterator[None]:
    """A regression (open() blocking on a FIFO) fails the test instead of hanging the suite."""

    def expired(_signum: int, _frame: object) -> None:
        raise Blocked("blocked: the file was opened before it was checked")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def one_line_error(call: Callable[[], Any], *fragments: str) -> str:
    with no_hang(), pytest.raises(UserError) as info:
        call()
    message = str(info.value)
    assert "\n" not in message and info.value.exit_code == 2, message
    for fragment in fragments:
        assert fragment in message, message
    return message


def _folder_with(tmp: Path, name: str) -> Path:
    (tmp / "config.json").write_text(LLAMA.read_text())
    os.mkfifo(tmp / name)
    return tmp


READERS: dict[str, Callable[[Path], Any]] = {
    "models.toml": load_models,
    "model.json": detect_kind,
    "config.json": hf_read_json,
    "keras.json": read_json,
    "model.keras": read_archive_config,
    "model.gguf": load_gguf,
    "model.safetensors": read_header,
    "given.toml": lambda p: resolve_models_path(p),
}


@pytest.mark.parametrize("name", sorted(READERS))
def test_a_fifo_is_refused_before_it_is_opened(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    os.mkfifo(path)
    one_line_error(lambda: READERS[name](path), str(path), "not a regular file", "FIFO")


def test_a_fifo_in_a_model_folder_is_refused(tmp_path: Path) -> None:
    folder = _folder_with(tmp_path, "model.safetensors")
    one_line_error(lambda: load_folder(folder), "model.safetensors: not a regular file")


def test_a_device_and_a_socket_are_refused(tmp_path: Path) -> None:
    one_line_error(lambda: detect_kind(Path("/dev/null")), "/dev/null", "character device")
    sock_path = tmp_path / "s.toml"
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(sock_path))
        one_line_error(lambda: load_models(sock_path), "socket")


def test_a_fifo_name_is_shown_safely(tmp_path: Path) -> None:
    path = tmp_path / "evil\x1b[31m.toml"
    os.mkfifo(path)
    message = one_line_error(lambda: load_models(path), "^[[31m")
    assert "\x1b" not in message


def _sparse(path: Path, size: int, head: bytes = b"") -> Path:
    path.write_bytes(head)
    os.truncate(path, size)
    return path


def test_a_huge_models_file_is_refused_by_its_size(tmp_path: Path) -> None:
    path = _sparse(tmp_path / "models.toml", 17 << 20, b'[[model]]\nname = "m"\n#')
    one_line_error(lambda: load_models(path), "models.toml: models file is 17.0 MiB", "16 MiB")


def test_a_huge_local_gputui_toml_is_refused_by_its_size(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _sparse(tmp_path / "gputui.toml", 300 << 20, b"[[model]]\n#" + b"x" * 9000)
    monkeypatch.chdir(tmp_path)
    with no_hang():
        assert main(["fit", "--gpu", "RTX 3090"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "gputui.toml: models file is 300.0 MiB" in err and "16 MiB" in err


@pytest.mark.parametrize("reader", [hf_read_json, read_json])
def test_a_huge_json_config_is_refused_by_its_size(tmp_path: Path, reader: Any) -> None:
    path = _sparse(tmp_path / "config.json", 33 << 20, b'{"model_type": "llama"}')
    one_line_error(lambda: reader(path), "33.0 MiB", "32 MiB")


@pytest.mark.parametrize("reader", [hf_read_json, read_json])
def test_json_integers_past_the_digit_limit_are_one_line(tmp_path: Path, reader: Any) -> None:
    path = tmp_path / "config.json"
    path.write_text('{"model_type": "llama", "hidden_size": ' + "9" * 5000 + "}")
    one_line_error(lambda: reader(path), "invalid JSON", "5000 digits", "at most 100")


@pytest.mark.parametrize("depth", [200, 100_000])
@pytest.mark.parametrize("reader", [hf_read_json, read_json])
def test_json_nesting_is_bounded(tmp_path: Path, reader: Any, depth: int) -> None:
    path = tmp_path / "config.json"
    path.write_text('{"model_type": "llama", "x": ' + "[" * depth + "]" * depth + "}")
    one_line_error(lambda: reader(path), "nested more than 128 levels deep")


def test_brackets_in_strings_are_not_nesting(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "llama", "note": "[" * 500 + "{" * 500, "x": [[1]]}))
    assert hf_read_json(path)["x"] == [[1]]
    assert inputfile.too_deep([[[]]], 2) and not inputfile.too_deep([[[]]], 3)


def _archive(path: Path, members: dict[str, bytes], **kw: Any) -> Path:
    with zipfile.ZipFile(path, "w", **kw) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return path


def _set_flag_bits(path: Path, bits: int) -> None:
    """Mark every member encrypted (general purpose flag bit 0), as a password-zip would."""
    raw = bytearray(path.read_bytes())
    for sig, at in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):
        start = 0
        while (i := raw.find(sig, start)) >= 0:
            (flags,) = struct.unpack_from("<H", raw, i + at)
            struct.pack_into("<H", raw, i + at, flags | bits)
            start = i + 4
    path.write_bytes(bytes(raw))


def test_an_encrypted_zip_member_is_refused(tmp_path: Path) -> None:
    path = _archive(tmp_path / "m.keras", {"config.json": json.dumps(KERAS).encode()})
    _set_flag_bits(path, 0x1)
    one_line_error(lambda: read_archive_config(path), "config.json: encrypted zip member")


def test_an_unsupported_compression_is_refused(tmp_path: Path) -> None:
    path = _archive(
        tmp_path / "m.keras",
        {"config.json": json.dumps(KERAS).encode()},
        compression=zipfile.ZIP_BZIP2,
    )
    one_line_error(lambda: read_archive_config(path), "compression method 12", "deflate")


def test_a_member_inflating_past_the_cap_is_refused(tmp_path: Path) -> None:
    config = json.dumps(KERAS).encode() + b" " * (40 << 20)  # a valid, 40 MiB config.json
    path = _archive(tmp_path / "m.keras", {"config.json": config}, compression=zipfile.ZIP_DEFLATED)
    assert path.stat().st_size < 1 << 20
    one_line_error(lambda: read_archive_config(path), "config.json", "32 MiB")


def test_too_many_zip_members_are_refused(tmp_path: Path) -> None:
    members = {f"assets/{i}": b"" for i in range(inputfile.ZIP_MAX_MEMBERS + 1)}
    path = _archive(tmp_path / "m.keras", {"config.json": json.dumps(KERAS).encode(), **members})
    one_line_error(lambda: read_archive_config(path), "members", "at most 4,096")


def test_a_regular_file_still_reads(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"a": [[[1]]], "n": 10**99}))
    assert hf_read_json(path) == {"a": [[[1]]], "n": 10**99}
    assert inputfile.read_text(path) == path.read_text()


def _claim_members(path: Path, claimed: int) -> None:
    """Rewrite the end record's two member counts: an archive's own claim, which can lie."""
    raw = bytearray(path.read_bytes())
    at = raw.rfind(b"PK\x05\x06")
    raw[at + 8 : at + 12] = claimed.to_bytes(2, "little") * 2
    path.write_bytes(bytes(raw))


def test_the_member_bound_counts_the_directory_not_the_end_record(tmp_path: Path) -> None:
    members = {f"{i}": b"" for i in range(inputfile.ZIP_MAX_MEMBERS + 904)}
    path = _archive(tmp_path / "m.keras", {"config.json": json.dumps(KERAS).encode(), **members})
    _claim_members(path, 3)
    with zipfile.ZipFile(path) as archive:  # zipfile itself believes the directory
        assert len(archive.infolist()) == inputfile.ZIP_MAX_MEMBERS + 905
    one_line_error(lambda: read_archive_config(path), "more than 4,096 members", "claims 3")


def test_an_archive_at_the_member_bound_with_an_honest_record_reads(tmp_path: Path) -> None:
    members = {f"{i}": b"" for i in range(inputfile.ZIP_MAX_MEMBERS - 1)}
    path = _archive(tmp_path / "m.keras", {"config.json": json.dumps(KERAS).encode(), **members})
    prefixed = tmp_path / "p.keras"  # data before the archive: zipfile finds it all the same
    prefixed.write_bytes(b"#!/bin/sh\n" * 10 + path.read_bytes())
    for archive in (path, prefixed):
        assert json.loads(inputfile.read_zip_member(archive, "config.json") or b"") == KERAS
