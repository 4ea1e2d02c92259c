"""Every option that names a file, of every command, refuses a hostile file in one line.

The options are found by walking the argparse parser (any argument whose type
makes a path), so an option added later is covered or fails here until it is
listed in BASE/COMPANIONS. Each runs as the user would run it, in a child with
a timeout: a FIFO that blocks the read is a failure here, not a hung suite.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from gputui.cli import build_parser
from gputui.commands import path_arg

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs"),
    pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command"),
]

# How each command is started so that only the file option under test can fail.
BASE: dict[str, list[str]] = {
    "check": ["check", "--source", "demo"],
    "report": ["report"],
    "": ["--demo"],  # the dashboard (it refuses to start without a terminal, after the files)
    "snapshot": ["snapshot"],
    "fit": ["fit"],
    "exporter": ["exporter", "--source", "demo", "--listen", "127.0.0.1:0"],
    "watch": ["watch", "--source", "demo", "--polls", "1", "--alerts"],
    "record": ["record", "--source", "demo"],
    "replay": ["replay"],
}
# Options that need others beside them: "CERT" and "KEY" stand for a valid pair.
COMPANIONS: dict[str, list[str]] = {
    "--tls-cert": ["--tls-key", "KEY"],
    "--tls-key": ["--tls-cert", "CERT"],
    "--tls-client-ca": ["--tls-cert", "CERT", "--tls-key", "KEY"],
    "--basic-auth-file": ["--tls-cert", "CERT", "--tls-key", "KEY"],
    # an export's file is checked before the recording is read
    "--csv": ["missing-recording.sqlite"],
    "--parquet": ["missing-recording.sqlite"],
}
# Path options that name a folder, not a file (hidden: the tests' catalog override).
FOLDERS = {("catalog", "--catalog-dir")}
HOSTILE = ["fifo", "/dev/zero", "not-utf8", "huge"]


def _file_options() -> Iterator[tuple[str, str]]:
    """(command, option) for every path-typed argument; a positional's option is its metavar."""
    parser = build_parser()
    stack: list[tuple[str, argparse.ArgumentParser]] = [("", parser)]
    while stack:
        command, current = stack.pop()
        for action in current._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    stack.append(((f"{command} {name}").strip(), sub))
            elif action.type in (Path, path_arg):
                option = action.option_strings[0] if action.option_strings else str(action.metavar)
                if (command, option) not in FOLDERS:
                    yield command, option


FILE_OPTIONS = sorted(set(_file_options()))


def test_the_walk_finds_every_kind_of_file_option() -> None:
    found = set(FILE_OPTIONS)
    assert {("exporter", "--basic-auth-file"), ("exporter", "--tls-key"), ("", "--models")} <= found
    assert ("fit", "MODELS") in found
    unknown = [command for command, _ in FILE_OPTIONS if command not in BASE]
    assert not unknown, f"add these commands to BASE: {unknown}"


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("hostile")
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
         "-nodes", "-days", "2", "-subj", "/CN=127.0.0.1",
         "-keyout", str(folder / "key.pem"), "-out", str(folder / "cert.pem")],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    os.mkfifo(folder / "fifo.toml")
    bad = folder / "not-utf8.toml"
    bad.write_bytes(b'name = "\xff\xfe caf\xe9"\n')
    huge = folder / "huge.toml"
    with huge.open("wb") as handle:
        handle.truncate(40 << 20)  # sparse: over every cap, costs no disk
    for path in (bad, huge, folder / "key.pem"):
        path.chmod(0o600)  # a password file must not be readable by others: mode is not the test
    return {
        "fifo": folder / "fifo.toml",
        "/dev/zero": Path("/dev/zero"),
        "not-utf8": bad,
        "huge": huge,
        "CERT": folder / "cert.pem",
        "KEY": folder / "key.pem",
    }


@pytest.mark.parametrize("hostile", HOSTILE)
@pytest.mark.parametrize(("command", "option"), FILE_OPTIONS, ids=lambda v: v or "dashboard")
def test_each_file_option_refuses_a_hostile_file_in_one_line(
    command: str, option: str, hostile: str, files: dict[str, Path], tmp_path: Path
) -> None:
    path = files[hostile]
    extra = [str(files.get(word, word)) for word in COMPANIONS.get(option, [])]
    named = [str(path)] if not option.startswith("-") else [option, str(path)]
    argv = [*BASE[command], *named, *extra]
    done = subprocess.run(
        [sys.executable, "-m", "gputui", *argv],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,  # no ./gputui.toml from the repository
        env={**os.environ, "GPUTUI_CACHE_DIR": ""},
    )
    lines = done.stderr.splitlines()
    assert done.returncode == 2, (argv, done.stderr[-2000:])
    assert len(lines) == 1 and path.name in lines[0], (argv, done.stderr[-2000:])
    assert done.stdout == ""
