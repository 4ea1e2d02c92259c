"""Standard output that fails cleanly: a full disk or a closed pipe is one line, never a traceback.

`gputui snapshot > /dev/full` used to end in an OSError traceback, and
`gputui catalog --json | head -1` could print "Exception ignored ... BrokenPipeError"
when the error only surfaced as the interpreter flushed stdout at exit.

`run_guarded` puts a small layer under `sys.stdout` whose only job is to tell
a failed write *to stdout* apart from every other OSError (a scenario file
that cannot be read must stay a UserError naming that file). It flushes before
returning, so the error surfaces here rather than at shutdown, and after an
error it points file descriptor 1 at /dev/null, as the Python documentation's
note on SIGPIPE advises, so nothing left in a buffer can fail again at exit.

A stdout closed before gputui started (`gputui catalog --json >&-`) is the
same kind of failure: Python then sets `sys.stdout` to None, which `print`
writes to without a word, so the output was lost and the exit code was 0.
`install` puts a stream there whose first write fails with EBADF, and fd 1 is
left alone afterwards (a file gputui opened may be using that number).

Exit codes follow the shells: 141 (128 + SIGPIPE) for a reader that went
away, quietly, as `yes | head -1` does; 1 with one line on stderr for a disk
that is full or a device that failed.
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import sys
from collections.abc import Callable

EXIT_BROKEN_PIPE = 141
EXIT_WRITE_FAILED = 1
# Errors of the original (unguarded) stdout that mean "this output cannot be written".
_WRITE_ERRNOS = frozenset(
    getattr(errno, name)
    for name in ("ENOSPC", "EIO", "EDQUOT", "EFBIG", "EBADF")
    if hasattr(errno, name)
)


class OutputError(BaseException):
    """A write to standard output failed; raised instead of the OSError.

    A BaseException, like KeyboardInterrupt, on purpose: output that cannot be
    written means stop, and an `except Exception` (or `except OSError`) between
    the print and `run_guarded` must not swallow it and carry on writing.
    """

    def __init__(self, error: OSError) -> None:
        super().__init__(error.errno, error.strerror)
        self.errno = error.errno
        self.strerror = error.strerror or str(error)


class _StdoutRaw(io.RawIOBase):
    """fd 1 as a raw stream whose write errors are OutputError. Never closes the descriptor."""

    def __init__(self, fd: int) -> None:
        super().__init__()
        self._fd = fd

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._fd

    def isatty(self) -> bool:
        return os.isatty(self._fd)

    def write(self, data: object) -> int:
        try:
            return os.write(self._fd, data)  # type: ignore[arg-type]
        except BlockingIOError:
            raise
        except OSError as exc:
            raise OutputError(exc) from None


class _ClosedStdout(io.RawIOBase):
    """Standard output that was closed when the process started: every write is EBADF.

    Until `report` silences it: what is still buffered then is dropped, not
    raised again as the interpreter flushes at exit.
    """

    silenced = False

    def writable(self) -> bool:
        return True

    def write(self, data: object) -> int:
        if self.silenced:
            return len(memoryview(data))  # type: ignore[arg-type]
        raise OutputError(OSError(errno.EBADF, os.strerror(errno.EBADF)))


def _closed_at_start(stream: object) -> _ClosedStdout | None:
    raw = getattr(getattr(stream, "buffer", None), "raw", None)
    return raw if isinstance(raw, _ClosedStdout) else None


def install() -> bool:
    """Replace `sys.stdout` by the guarded stream, once, when it is the process's real stdout.

    Left alone when something else already replaced it (pytest's capture, an
    embedding program). No stdout at all (fd 1 closed at start) gets the
    stream that fails on the first write: True when installed.
    """
    current = sys.stdout
    if current is None and sys.__stdout__ is None:
        sys.stdout = io.TextIOWrapper(io.BufferedWriter(_ClosedStdout()), encoding="utf-8")
        return True
    if (
        current is None
        or current is not sys.__stdout__
        or not isinstance(current, io.TextIOWrapper)
    ):
        return False
    try:
        fd = current.fileno()
    except (OSError, ValueError):
        return False
    try:
        current.flush()
    except OSError as exc:
        raise OutputError(exc) from None
    sys.stdout = io.TextIOWrapper(
        io.BufferedWriter(_StdoutRaw(fd)),
        encoding=current.encoding,
        errors=current.errors,
        line_buffering=current.line_buffering,
    )
    return True


class _QuietRaw(io.RawIOBase):
    """fd 2 as a raw stream whose write errors are dropped: a message that cannot be
    written (`2>/dev/full`, a reader gone) is lost, and the command goes on or exits
    with its own status instead of a traceback nobody can read either."""

    def __init__(self, fd: int) -> None:
        super().__init__()
        self._fd = fd

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._fd

    def isatty(self) -> bool:
        return os.isatty(self._fd)

    def write(self, data: object) -> int:
        size = len(memoryview(data))  # type: ignore[arg-type]
        try:
            return os.write(self._fd, data)  # type: ignore[arg-type]
        except OSError:
            return size


def _fd_open(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


def install_stderr() -> bool:
    """Make `sys.stderr` a stream that never fails, once, when it is the process's own.

    Closed at start (`2>&-`): Python sets `sys.stderr` to None, and `print(...,
    file=sys.stderr)` then writes to *stdout*, mixing error messages into the
    output. /dev/null takes fd 2 (so no file gputui opens later gets that number
    and receives a library's messages) and `sys.stderr` writes there. Open but
    failing (`2>/dev/full`): writes are dropped (`_QuietRaw`). Left alone when
    something else replaced it (pytest's capture). True when installed.
    """
    current = sys.stderr
    if current is None and sys.__stderr__ is None:
        if not _fd_open(2):
            try:
                devnull = os.open(os.devnull, os.O_WRONLY)
            except OSError:
                devnull = -1
            if devnull >= 0 and devnull != 2:
                with contextlib.suppress(OSError):
                    os.dup2(devnull, 2)
                os.close(devnull)
        target = 2 if _fd_open(2) else -1
        raw: io.RawIOBase = _QuietRaw(target) if target >= 0 else _ClosedStdout()
        if isinstance(raw, _ClosedStdout):
            raw.silenced = True
        sys.stderr = io.TextIOWrapper(
            io.BufferedWriter(raw), encoding="utf-8", errors="backslashreplace", line_buffering=True
        )
        return True
    if (
        current is None
        or current is not sys.__stderr__
        or not isinstance(current, io.TextIOWrapper)
    ):
        return False
    try:
        fd = current.fileno()
    except (OSError, ValueError):
        return False
    with contextlib.suppress(OSError, ValueError):
        current.flush()
    sys.stderr = io.TextIOWrapper(
        io.BufferedWriter(_QuietRaw(fd)),
        encoding=current.encoding,
        errors=current.errors,
        line_buffering=True,
    )
    return True


def flush() -> None:
    """Flush what was printed (and anything written to the original stdout) now, not at exit."""
    for stream in (sys.stdout, sys.__stdout__):
        if stream is None:
            continue
        try:
            stream.flush()
        except OutputError:
            raise
        except BrokenPipeError as exc:  # the original stream, or an unguarded one
            raise OutputError(exc) from None
        except OSError as exc:
            if exc.errno in _WRITE_ERRNOS:
                raise OutputError(exc) from None
            raise
        except ValueError:  # closed by the command; nothing left to flush
            pass


def report(error: OutputError | BrokenPipeError) -> int:
    """Silence stdout for the rest of the process; say why on stderr unless the pipe closed."""
    _stdout_to_devnull()
    if error.errno == errno.EPIPE:
        return EXIT_BROKEN_PIPE
    # If stderr is gone too, the exit code is all that is left.
    with contextlib.suppress(OSError, ValueError):
        print(f"gputui: cannot write output: {error.strerror}", file=sys.stderr, flush=True)
    return EXIT_WRITE_FAILED


def run_guarded(body: Callable[[], int]) -> int:
    """`body()` with every stdout failure turned into `report`'s exit code."""
    try:
        install_stderr()
        install()
        try:
            code = body()
        except SystemExit:
            flush()  # argparse's --help and usage exits print too
            raise
        flush()
        return code
    except (OutputError, BrokenPipeError) as exc:
        return report(exc)


def _stdout_to_devnull() -> None:
    closed = _closed_at_start(sys.stdout)
    if closed is not None:
        closed.silenced = True
        return  # fd 1 is not ours: whatever holds that number now is a file gputui opened
    try:
        fd = sys.stdout.fileno() if sys.stdout is not None else 1
    except (OSError, ValueError):
        fd = 1
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
    except OSError:
        return
    try:
        with contextlib.suppress(OSError):
            os.dup2(devnull, fd)
    finally:
        os.close(devnull)
