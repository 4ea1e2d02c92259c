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
from gputui.commands import tui as tui_cmd
from gputui.commands.snapshot import FAST_FLAGS, fast_args

# Words a user could put after `snapshot`: the fast flags, their abbreviations and spellings
# with values, every other option of the subcommand and of the dashboard, help, separators.
WORDS = (
    *FAST_FLAGS,
    "--js",
    "--jso",
    "--json-s",
    "--dem",
    "--json=1",
    "--demo=",
    "--JSON",
    "-j",
    "-",
    "--",
    "-h",
    "--help",
    "--version",
    "--scenario",
    "x.toml",
    "--prometheus",
    "http://h:9090",
    "--match",
    '{a="b"}',
    "--interval",
    "2",
    "--source",
    "nvml",
    "--readonly",
    "snapshot",
    "",
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
    lines += [
        ["snapshot", *rest] for n in (3, 4) for rest in itertools.product(FAST_FLAGS, repeat=n)
    ]
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
    [
        ["snapshot"],
        ["snapshot", "--json"],
        ["snapshot", "--demo", "--json"],
        ["snapshot", "--json-schema"],
    ],
)
def test_the_common_forms_take_the_fast_path(words: list[str]) -> None:
    fast = fast_args(words)
    assert fast is not None and fast.run is _argparse(words)["run"]  # type: ignore[index]


@pytest.mark.parametrize(
    "words",
    [
        ["snapshot", "--js"],
        ["snapshot", "--json=1"],
        ["snapshot", "-h"],
        ["snapshot", "--scenario"],
    ],
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


# -- the dashboard: `gputui [--source X] [--interval N] [--demo] [--readonly]` ----------------

# Words a user could put on the dashboard's command line: the fast options with good, bad,
# odd and negative values, `=` spellings, abbreviations, the other options, help, subcommands.
DASHBOARD_WORDS = (
    *tui_cmd.FAST_FLAGS,
    *tui_cmd.FAST_VALUES,
    *tui_cmd.SOURCES,
    "2",
    "0.5",
    " 3 ",
    "1_0",
    "1e3",
    "inf",
    "nan",
    "-1",
    "-inf",
    "x",
    "NVML",
    "",
    "--source=nvml",
    "--source=",
    "--source=-1",
    "--interval=2",
    "--interval=-1",
    "--interval=",
    "--interval=1=2",
    "--demo=",
    "--readonly=1",
    "--sou",
    "--int",
    "--dem",
    "--inter=1",
    "--scenario",
    "--prometheus",
    "--match",
    "--version",
    "-h",
    "--help",
    "--",
    "-",
    "snapshot",
    "catalog",
    "--json",
)


def _same(a: dict[str, object] | None, b: dict[str, object] | None) -> bool:
    """Equal namespaces, value and type (1 == 1.0), where an interval of nan equals nan."""
    if a is None or b is None:
        return a is b
    nan = {k for k, v in a.items() if isinstance(v, float) and v != v}
    return a.keys() == b.keys() and all(
        type(a[k]) is type(b[k]) and (b[k] != b[k] if k in nan else a[k] == b[k]) for k in a
    )


def test_every_accepted_dashboard_line_parses_as_argparse_parses_it() -> None:
    lines = [list(rest) for n in range(4) for rest in itertools.product(DASHBOARD_WORDS, repeat=n)]
    lines += [
        list(r)
        for r in itertools.product(("--demo", "--source", "nvml", "--interval", "5"), repeat=5)
    ]
    accepted = 0
    for words in lines:
        fast = tui_cmd.fast_args(words)
        if fast is None:
            continue  # argparse's to parse (or to refuse), as before
        accepted += 1
        assert _same(vars(fast), _argparse(words)), words
    # not vacuous: every flag combination, every good value in both spellings
    assert accepted >= 190
    assert tui_cmd.fast_args([]) is not None
    assert tui_cmd.fast_args(["--source", "nvml", "--interval", "1"]) is not None


@pytest.mark.parametrize(
    "words",
    [
        ["--sou", "nvml"],
        ["--source", "gpu"],
        ["--source"],
        ["--interval", "-1"],
        ["--interval", "x"],
        ["--demo=1"],
        ["-h"],
        ["--source", "nvml", "snapshot"],
        ["--scenario", "a.toml"],
        ["fit"],
    ],
)
def test_other_dashboard_lines_are_left_to_argparse(words: list[str]) -> None:
    assert tui_cmd.fast_args(words) is None


def test_an_argparse_error_on_the_dashboard_line_is_still_argparse_s(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exc:
        cli.main(["--source", "gpu"])
    assert exc.value.code == 2
    assert "argument --source: invalid choice: 'gpu'" in capsys.readouterr().err


def test_dashboard_common_line_does_not_import_argparse() -> None:
    """The dashboard keeps what it imports for its lifetime: argparse and every subcommand's
    parser module were ~0.5 MiB of it. Run up to where the dashboard would need a terminal."""
    code = (
        "import sys\n"
        "from gputui.cli import main\n"
        "rc = main(['--demo', '--interval', '2'])\n"
        "print(rc, 'argparse' in sys.modules, 'gputui.commands.fit' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        stdin=subprocess.DEVNULL,
    )
    assert out.stdout.split() == ["2", "False", "False"]
    assert "needs a terminal" in out.stderr
