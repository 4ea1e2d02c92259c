from __future__ import annotations

import errno
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gputui import __version__
from gputui.cli import main


def test_version_flag(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.strip() == f"gputui {__version__}"


def test_python_dash_m_runs_the_same_cli() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "gputui", "--version"], capture_output=True, text=True
    )
    assert proc.returncode == 0
    assert proc.stdout.strip() == f"gputui {__version__}"


def test_unknown_subcommand_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["frobnicate"])
    assert exc.value.code == 2
    assert "invalid choice" in capsys.readouterr().err


# --- stdout that cannot be written: one handler for every subcommand -------------

REPO = Path(__file__).resolve().parents[2]
OUTPUT_COMMANDS = [
    ["snapshot", "--demo"],
    ["snapshot", "--demo", "--json"],
    ["snapshot", "--json-schema"],
    ["catalog"],
    ["catalog", "--json"],
    ["catalog", "show", "RTX 3090"],
    ["fit", "examples/models.toml", "--gpu", "RTX 3090"],
    ["fit", "examples/models.toml", "--gpu", "RTX 3090", "--json"],
    ["--help"],
]


def _gputui(args: list[str], stdout: int, stderr: int | None = subprocess.PIPE) -> tuple[int, str]:
    proc = subprocess.run(
        [sys.executable, "-m", "gputui", *args],
        stdout=stdout,
        stderr=stderr,
        cwd=REPO,
        text=True,
        timeout=120,
    )
    return proc.returncode, proc.stderr or ""


@pytest.mark.slow
@pytest.mark.parametrize("args", OUTPUT_COMMANDS, ids=" ".join)
def test_full_disk_is_one_line_and_exit_1(args: list[str]) -> None:
    with open("/dev/full", "w") as full:
        code, err = _gputui(args, full.fileno())
    assert (code, err) == (1, "gputui: cannot write output: No space left on device\n")


@pytest.mark.slow
@pytest.mark.parametrize("args", OUTPUT_COMMANDS, ids=" ".join)
def test_closed_pipe_is_quiet_and_exit_141(args: list[str]) -> None:
    """The reader is gone before the first write, as after `| head -1` on a long output.

    Small outputs only fail when the interpreter flushes stdout at exit; that
    must be just as quiet (no "Exception ignored ... BrokenPipeError").
    """
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        code, err = _gputui(args, write_end)
    finally:
        os.close(write_end)
    assert (code, err) == (141, "")


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="F_SETPIPE_SZ is Linux's")
def test_reader_that_stops_after_one_line() -> None:
    """`gputui snapshot --json | head -1`: the reader leaves while gputui is still writing.

    The pipe is shrunk to one page so that the 39 KB snapshot cannot fit in it
    before the reader goes away, whatever the scheduling.
    """
    import fcntl

    read_end, write_end = os.pipe()
    fcntl.fcntl(write_end, 1031, 4096)  # F_SETPIPE_SZ
    scenario = REPO / "src/gputui/sources/simulated/scenarios/demo-8gpu.toml"
    proc = subprocess.Popen(
        [sys.executable, "-m", "gputui", "snapshot", "--json", "--scenario", str(scenario)],
        stdout=write_end, stderr=subprocess.PIPE, cwd=REPO, text=True,
    )
    os.close(write_end)
    with os.fdopen(read_end, "rb") as reader:
        assert reader.readline() == b"{\n"
    _, err = proc.communicate(timeout=120)
    assert (proc.returncode, err) == (141, "")


CLOSED_STDOUT_COMMANDS = [
    ["catalog", "--json"],
    ["snapshot", "--demo"],
    ["snapshot", "--demo", "--json"],
    ["fit", "examples/models.toml", "--gpu", "RTX 3090"],
    ["--version"],
]


@pytest.mark.slow
@pytest.mark.parametrize("args", CLOSED_STDOUT_COMMANDS, ids=" ".join)
def test_closed_stdout_is_one_line_and_exit_1(args: list[str]) -> None:
    """`gputui catalog --json >&-`: Python sets sys.stdout to None and print() would drop
    the output without a word (exit 0); EBADF is an output error like ENOSPC."""
    proc = subprocess.run(
        ["sh", "-c", '"$0" "$@" >&-', sys.executable, "-m", "gputui", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        cwd=REPO,
        text=True,
        timeout=120,
    )
    expected = "gputui: cannot write output: Bad file descriptor\n"
    assert (proc.returncode, proc.stderr) == (1, expected)


@pytest.mark.slow
def test_stderr_gone_too_is_still_exit_1() -> None:
    with open("/dev/full", "w") as full:
        code, _ = _gputui(["snapshot", "--demo"], full.fileno(), stderr=full.fileno())
    assert code == 1


@pytest.mark.slow
def test_other_errors_keep_their_own_message(tmp_path: Path) -> None:
    """A scenario file that cannot be read is its UserError, not a stdout error."""
    with open("/dev/full", "w") as full:
        code, err = _gputui(["snapshot", "--scenario", str(tmp_path / "no.toml")], full.fileno())
    assert (code, err) == (2, f"gputui: {tmp_path / 'no.toml'}: scenario file not found\n")


def test_output_error_is_not_swallowed_by_broad_handlers() -> None:
    """`except Exception` / `except OSError` between a print and the handler cannot eat it."""
    from gputui.core.outstream import OutputError

    def body() -> int:
        try:
            raise OutputError(OSError(errno.ENOSPC, "No space left on device"))
        except Exception:  # pragma: no cover - must not run
            return 0

    with pytest.raises(OutputError):
        body()
    assert not issubclass(OutputError, Exception)


def test_unguarded_broken_pipe_in_process_is_141(monkeypatch: pytest.MonkeyPatch) -> None:
    """Under pytest's capture stdout is not replaced; a BrokenPipeError still maps to 141."""
    from gputui import cli

    def broken(_args: object) -> int:
        raise BrokenPipeError(errno.EPIPE, "Broken pipe")

    monkeypatch.setattr("gputui.core.outstream._stdout_to_devnull", lambda: None)
    monkeypatch.setattr("gputui.commands.tui.run", broken)  # `gputui` alone: commands/tui.py's fast_args
    assert cli.main([]) == 141


def test_flush_reports_an_unguarded_full_stdout(monkeypatch: pytest.MonkeyPatch) -> None:
    """Output an embedding program wrote to the original stdout also fails as OutputError."""
    from gputui.core.outstream import OutputError, flush

    with open("/dev/full", "w") as full:
        full.write("pending")
        monkeypatch.setattr(sys, "stdout", full)
        monkeypatch.setattr(sys, "__stdout__", full)
        with pytest.raises(OutputError) as exc:
            flush()
        assert exc.value.errno == errno.ENOSPC
        full.buffer.raw.close()  # drop what is pending; closing would flush again
