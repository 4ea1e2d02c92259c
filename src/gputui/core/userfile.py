"""The one way gputui writes or removes a file in a user's folders, so nothing they had is lost.

`replace_file` writes a whole file atomically: a temporary file in the target's own
folder, flushed to disk (fsync), then renamed over the target, so a crash or a full
disk leaves the old file or the new one, never half of either. It writes *through* a
symbolic link (dotfile managers link `settings.toml` into a repository): the link stays
a link and the file it names is replaced, keeping that file's permission bits. It
refuses, with an `OSError` naming the reason, what it cannot replace without loss: a
link to nothing or a link loop, a folder, FIFO or device, a read-only file, and, when
the caller asks (`may_replace`), a file whose present bytes it does not vouch for (the
settings file changed since it was read; a cache file gputui cannot prove it wrote).

`read_own` and `remove_unchanged` are the two halves of deleting a file gputui wrote:
read it without following a link and only if this user owns it, let the caller prove
from the bytes that gputui wrote it, and remove it only if it is still that same file.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path

#: A file whose bytes a caller must vouch for is read up to this size; a larger one is
#: not vouched for (no file gputui writes is near it).
VOUCH_MAX_BYTES = 64 << 20


class WriteRefused(OSError):
    """A file gputui will not replace; `strerror` says why, in words for a warning line."""

    def __init__(self, reason: str) -> None:
        super().__init__(errno.EPERM, reason)


def _target(path: Path, follow_symlinks: bool) -> tuple[Path, os.stat_result | None]:
    """The file a write to `path` replaces (a symlink's target) and its stat, None if absent."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return path, None
    target = path
    if stat.S_ISLNK(st.st_mode):
        if not follow_symlinks:
            raise WriteRefused("a symbolic link; left as it is")
        try:
            target = Path(os.path.realpath(path, strict=True))
            st = os.stat(target)
        except (OSError, RuntimeError):
            raise WriteRefused("a symbolic link to nothing, or a loop of links") from None
    if not stat.S_ISREG(st.st_mode):
        raise WriteRefused("not a regular file")
    if not st.st_mode & 0o222 or not os.access(target, os.W_OK):
        raise WriteRefused("the file is read-only")
    return target, st


def _read_capped(path: Path, cap: int) -> bytes | None:
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            return None
        raw = handle.read(cap + 1)
    return raw if len(raw) <= cap else None


def _fsync_dir(folder: Path) -> None:
    """Make the rename itself durable (best effort: not every system can open a folder)."""
    with contextlib.suppress(OSError, AttributeError):
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _same_file(a: os.stat_result, b: os.stat_result) -> bool:
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def _create(temporary: str, target: Path) -> bool:
    """Put a new file in place only if none is there yet (a hard link fails on an existing
    name, where a rename would replace it); False where the file system has no hard links."""
    try:
        os.link(temporary, target)
    except FileExistsError:
        raise WriteRefused(
            "a file appeared there while it was being written; left as it is"
        ) from None
    except OSError:
        return False
    os.unlink(temporary)
    _fsync_dir(target.parent)
    return True


def replace_file(
    path: Path,
    data: bytes,
    *,
    new_mode: int = 0o600,
    keep_attributes: bool = True,
    follow_symlinks: bool = True,
    may_replace: Callable[[bytes], bool] | None = None,
) -> Path:
    """Write `data` as the whole file at `path`, atomically and through a symlink.

    `new_mode`: the permission bits of a file that did not exist; an existing file keeps
    its own bits and owner unless `keep_attributes` is False (a cache, whose bits and
    owner are part of its trust, is rewritten as this user's, `new_mode`).
    `follow_symlinks` False: a link at `path` is refused, neither followed nor replaced.
    `may_replace(present_bytes)`: asked before an existing file is replaced; False (or a
    file too big to read) refuses. A new file is put in place only if none appeared
    meanwhile. Returns the file written (a link's target). Raises OSError (`WriteRefused`
    for a refusal); the target is then untouched.
    """
    target, st = _target(path, follow_symlinks)
    if st is not None and may_replace is not None:
        present = _read_capped(target, VOUCH_MAX_BYTES)
        if present is None or not may_replace(present):
            raise WriteRefused("the file is not what gputui read or wrote; left as it is")
    folder = target.parent
    fd, temporary = tempfile.mkstemp(dir=folder, prefix=f".{target.name}.", suffix=".tmp")
    try:
        keep = st is not None and keep_attributes
        os.fchmod(fd, stat.S_IMODE(st.st_mode) if st is not None and keep else new_mode)
        if st is not None and keep and (st.st_uid, st.st_gid) != (os.geteuid(), os.getegid()):
            with contextlib.suppress(OSError):  # only root may give a file away
                os.fchown(fd, st.st_uid, st.st_gid)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        # Swapped, removed or created since it was checked? Then refuse, not clobber.
        _, now = _target(path, follow_symlinks)
        same = (now is None) if st is None else (now is not None and _same_file(now, st))
        if not same:
            raise WriteRefused("the file changed while it was being written; left as it is")
        if st is None and _create(temporary, target):
            return target
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    _fsync_dir(folder)
    return target


def read_own(path: Path, max_bytes: int) -> tuple[bytes, os.stat_result] | None:
    """The bytes and stat of `path` if it is a regular file (not a link) this user owns and
    at most `max_bytes` long; None otherwise, or when it cannot be read."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags | getattr(os, "O_CLOEXEC", 0))
    except (OSError, ValueError):
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_size > max_bytes:
            return None
        with os.fdopen(os.dup(fd), "rb") as handle:
            raw = handle.read(max_bytes + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    return (raw, st) if len(raw) <= max_bytes else None


def remove_unchanged(path: Path, seen: os.stat_result) -> bool:
    """Remove `path` only if it is still the file `seen` describes (same inode, size and
    modification time, not a link); True when removed."""
    try:
        now = os.lstat(path)
        same = (now.st_dev, now.st_ino, now.st_size, now.st_mtime_ns) == (
            seen.st_dev,
            seen.st_ino,
            seen.st_size,
            seen.st_mtime_ns,
        )
        if not same or not stat.S_ISREG(now.st_mode):
            return False
        os.unlink(path)
    except OSError:
        return False
    return True


def lock_store(path: Path) -> int:
    """Create `path` if absent (this user's, 0o600) and hold an exclusive lock on it: the
    one way an append-only store (a recording, written in place by SQLite) is opened.

    A store is appended to, never replaced, so `replace_file` does not fit it; what is
    checked is the same: a link is followed to a regular, writable file, never a folder,
    FIFO or device. The lock (`flock`, apart from SQLite's own byte-range locks) is held
    while the returned descriptor is open, so a second writer is refused, not interleaved.
    Raises `WriteRefused` naming why (`"another process is writing it"` when locked), or the
    `OSError` of the system (a read-only file system, a missing folder).
    """
    import fcntl

    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    target, st = _target(path, follow_symlinks=True)
    if st is None:
        # A new file: created here and only here, never over one that appeared meanwhile.
        with contextlib.suppress(FileExistsError):
            os.close(os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        target, st = _target(path, follow_symlinks=True)
    fd = os.open(target, flags)
    try:
        if st is None or not _same_file(os.fstat(fd), st):
            raise WriteRefused("the file changed while it was being opened; left as it is")
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise WriteRefused("another process is writing it") from None
    except BaseException:
        os.close(fd)
        raise
    return fd
