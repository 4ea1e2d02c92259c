"""`gputui snapshot [flags]` without argparse (commands/snapshot.py `fast_args`) must mean what
argparse would make of it: for every command line the fast path accepts, the same namespace;
everything else (values, abbreviations, --help, errors) is left to argparse."""

from __future__ import annotations

import contextlib
import io
import itertools
import subprocess
import sys

import pytest

from gputui import cli
from gputui.commands.snapshot import FAST_FLAGS, fast_args

# Words a user could put after `snapshot`: the fast flags, their abbreviations and spellings
# with values, every other option of the subcommand and of the dashboard, help, separators.
WORDS = (
    *FAST_FLAGS,
    "--js", "--jso", "--json-s", "--dem", "--json=1", "--demo=", "--JSON", "-j", "-",
    "--", "-h", "--help", "--version", "--scenario", "x.toml", "--prometheus", "http://h:9090",
    "--match", "{a=\"b\"}", "--interval", "2", "--source", "nvml", "--readonly", "snapshot", "",
)


def _argparse(words: list[str]) -> dict[str, object] | None:
    """argparse's namespace for `words`, or None where it exits (an error, --help)."""
    parser = cli.build_parser(words[0] if words and words[0] in cli.COMMANDS else None)
    with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
        try:
            return vars(parser.parse_args(words))
        except SystemExit:
            return None


def _command_lines() -> list[list[str]]:
    lines = [["snapshot", *rest] for n in range(3) for rest in itertools.product(WORDS, repeat=n)]
    # every order and repetition of the fast flags, up to four of them
    lines += [["snapshot", *rest] for n in (3, 4) for rest in itertools.product(FAST_FLAGS, repeat=n)]
    lines += [[], ["--demo", "snapshot"], ["--json"], ["snapshots"], ["catalog"], ["fit", "--json"]]
    return lines


def test_every_accepted_command_line_parses_as_argparse_parses_it() -> None:
    accepted = 0
    for words in _command_lines():
        fast = fast_args(words)
        if fast is None:
            continue  # argparse's to parse (or to refuse), as before
        accepted += 1
        assert vars(fast) == _argparse(words), words
    # the fast path is not vacuous: `snapshot` with any combination of its flags
    assert accepted == 1 + 3 + 9 + 27 + 81


@pytest.mark.parametrize(
    "words",
    [["snapshot"], ["snapshot", "--json"], ["snapshot", "--demo", "--json"], ["snapshot", "--json-schema"]],
)
def test_the_common_forms_take_the_fast_path(words: list[str]) -> None:
    fast = fast_args(words)
    assert fast is not None and fast.run is _argparse(words)["run"]  # type: ignore[index]


@pytest.mark.parametrize(
    "words",
    [["snapshot", "--js"], ["snapshot", "--json=1"], ["snapshot", "-h"], ["snapshot", "--scenario"]],
)
def test_refused_and_abbreviated_forms_are_left_to_argparse(words: list[str]) -> None:
    """argparse's own answer stands: an error (exit 2 with usage), help, or an expansion."""
    assert fast_args(words) is None


def test_snapshot_without_options_does_not_import_argparse() -> None:
    code = (
        "import sys, contextlib, io\n"
        "from gputui.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    rc = main(['snapshot', '--demo', '--json'])\n"
        "print(rc, 'argparse' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["0", "False"]


def test_an_argparse_error_is_still_argparse_s(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        cli.main(["snapshot", "--js"])
    assert exc.value.code == 2
    assert "ambiguous option: --js could match --json, --json-schema" in capsys.readouterr().err
