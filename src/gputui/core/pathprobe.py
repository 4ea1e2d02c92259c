"""Asking what is at a path the user named, without an OSError or a RuntimeError escaping.

`Path.is_dir()`, `is_file()` and `exists()` turn only "not there" into False: a name
longer than the system allows (ENAMETOOLONG), a permission error or a NUL raises, and
`Path.resolve()` raises RuntimeError on a symlink loop. Every probe of a user-given
path goes through here instead: "nothing there" is None or False, anything else is one
`UserError` line naming the path (exit 2). Standard library only (start-up paths).
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from gputui.core.errors import UserError
from gputui.core.textsafe import visible

# "nothing is there": the answer, not a failure
_ABSENT = (errno.ENOENT, errno.ENOTDIR)
_REASONS = {
    errno.ENAMETOOLONG: "the name is too long",
    errno.ELOOP: "a symbolic link that leads to itself (a loop)",
}


def _refused(path: Path | str, exc: OSError | ValueError) -> UserError:
    if isinstance(exc, ValueError):  # a NUL in the name
        reason = "not a valid path"
    else:
        reason = _REASONS.get(exc.errno or 0) or visible(exc.strerror or str(exc))
    return UserError(f"{short(path)}: cannot use this path: {reason}")


def short(path: Path | str, limit: int = 200) -> str:
    """A path as it may be printed: control characters made visible, a long one shortened."""
    text = visible(str(path))
    return text if len(text) <= limit else f"{text[: limit // 2]}…{text[-limit // 4 :]}"


def probe(path: Path, *, follow: bool = True) -> os.stat_result | None:
    """`os.stat(path)` (`os.lstat` without `follow`), or None when nothing is there."""
    try:
        return os.stat(path) if follow else os.lstat(path)
    except (OSError, ValueError) as exc:
        if isinstance(exc, OSError) and exc.errno in _ABSENT:
            return None
        raise _refused(path, exc) from None


def is_dir(path: Path) -> bool:
    """Whether `path` is a folder (following links); a path that cannot be asked is a UserError."""
    st = probe(path)
    return st is not None and stat.S_ISDIR(st.st_mode)


def is_file(path: Path) -> bool:
    """Whether `path` is a regular file (following links); as `is_dir` for the rest."""
    st = probe(path)
    return st is not None and stat.S_ISREG(st.st_mode)


def present(path: Path) -> bool:
    """Whether anything is at `path`, a dangling or looping link included."""
    return probe(path, follow=False) is not None


def absolute(path: Path) -> Path:
    """`path` made absolute without touching the file system (no resolve(): a link loop,
    a deleted working folder or a long name cannot fail it); `path` itself if cwd is gone."""
    try:
        return Path(os.path.abspath(path))
    except (OSError, ValueError):
        return path
