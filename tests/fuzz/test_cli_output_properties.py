"""Whatever write to stdout fails, and however far into the output: a clean exit, never a traceback.

In process, for speed: stdout is a real file, and the guarded stream's
`os.write` fails with a chosen errno once a chosen number of bytes went out
(the subprocess tests in tests/core/test_cli_entry.py use /dev/full and real pipes).
"""

from __future__ import annotations

import contextlib
import errno
import functools
import io
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from gputui.cli import main
from gputui.core import outstream

REPO = Path(__file__).resolve().parents[2]
COMMANDS = [
    ("snapshot", "--demo"),
    ("snapshot", "--demo", "--json"),
    ("snapshot", "--json-schema"),
    ("catalog",),
    ("catalog", "--json"),
    ("catalog", "show", "RTX 3090"),
    ("fit", str(REPO / "examples" / "models.toml"), "--gpu", "RTX 3090"),
    ("fit", str(REPO / "examples" / "models.toml"), "--gpu", "RTX 3090", "--json"),
    ("--help",),
    ("--version",),
]
ERRORS = [errno.EPIPE, errno.ENOSPC, errno.EIO, errno.EDQUOT, errno.EFBIG]


class _FailingOs:
    """`os` for gputui.core.outstream whose write() fails once `budget` bytes went out.

    Records what was written; once stdout is pointed at /dev/null (dup2), writes
    succeed again, as they would on the real /dev/null.
    """

    def __init__(self, budget: int | None, code: int = errno.EIO) -> None:
        self.budget = budget
        self.code = code
        self.written = bytearray()
        self.silenced = False

    def __getattr__(self, name: str) -> Any:
        return getattr(os, name)

    def dup2(self, fd: int, fd2: int) -> int:
        self.silenced = True
        return os.dup2(fd, fd2)

    def write(self, fd: int, data: bytes) -> int:
        if self.silenced:
            return len(data)
        if self.budget is None:
            self.written += data
            return len(data)
        if self.budget <= 0:
            raise OSError(self.code, os.strerror(self.code))
        n = min(len(data), self.budget)
        self.budget -= n
        self.written += bytes(data[:n])
        return n


def _run(args: tuple[str, ...], fake_os: _FailingOs) -> tuple[int, bytes, str]:
    """main(args) with stdout a real file (the process's 'real' stdout) and stderr captured.

    Ends with a flush of whatever stdout is then, as the interpreter does at exit.
    """
    with tempfile.TemporaryFile("w+", encoding="utf-8") as out:
        err = io.StringIO()
        saved = (sys.stdout, sys.__stdout__, outstream.os)
        sys.stdout = sys.__stdout__ = out  # type: ignore[misc]
        outstream.os = fake_os  # type: ignore[assignment]
        try:
            with contextlib.redirect_stderr(err):
                try:
                    code = main(list(args))
                except SystemExit as exc:
                    code = int(exc.code or 0)
                sys.stdout.flush()  # interpreter shutdown: must not fail again
        finally:
            sys.stdout, sys.__stdout__, outstream.os = saved  # type: ignore[misc]
        return code, bytes(fake_os.written), err.getvalue()


@functools.cache
def _normal(args: tuple[str, ...]) -> tuple[int, bytes]:
    code, data, err = _run(args, _FailingOs(None))
    assert "Traceback" not in err and data
    return code, data


@settings(max_examples=40, deadline=None)
@given(
    args=st.sampled_from(COMMANDS),
    code=st.sampled_from(ERRORS),
    after=st.one_of(st.integers(0, 64), st.integers(0, 40_000)),
)
def test_any_stdout_failure_ends_cleanly(args: tuple[str, ...], code: int, after: int) -> None:
    normal_code, normal_out = _normal(args)
    # `snapshot --demo` shows the time: its length can change by a few bytes between runs.
    exact = args[0] != "snapshot" or "--json-schema" in args
    if not exact and abs(after - len(normal_out)) < 64:
        after = len(normal_out) // 2
    got, out, err = _run(args, _FailingOs(after, code))
    if len(normal_out) <= after:  # never failed: the ordinary result
        assert got == normal_code and err == ""
        assert out == normal_out if exact else len(out) > 0
        return
    assert len(out) == after
    if exact:
        assert out == normal_out[:after]  # what was written is the output's beginning
    if code == errno.EPIPE:
        assert (got, err) == (141, "")
    else:
        assert (got, err) == (1, f"gputui: cannot write output: {os.strerror(code)}\n")
