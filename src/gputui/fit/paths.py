"""Where the models file comes from when the user names none.

Candidates, in order: `./gputui.toml`, the user's config file, the shipped
examples. The first is read implicitly from whatever directory gputui starts
in, which may be someone else's (a shared /tmp, a cloned repository, another
user's home when root runs gputui there). A file there is used only when it
belongs to the user running gputui (or to root) and nobody else may write it;
otherwise a warning says why and the next candidate is used. Only regular files
are candidates (a FIFO would block the read forever); the loader caps their size.
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Callable
from pathlib import Path

from gputui.core import pathprobe
from gputui.core.errors import UserError
from gputui.core.inputfile import regular_stat
from gputui.core.textsafe import visible

LOCAL_NAME = "gputui.toml"

Warn = Callable[[str], None]


def shipped_examples() -> Path:
    """The example models shipped with gputui (examples/models.toml, carried in the wheel)."""
    from gputui.core.resources import examples_dir

    return examples_dir() / "models.toml"


def user_models_file() -> Path:
    import platformdirs

    return Path(platformdirs.user_config_dir("gputui")) / "models.toml"


def _stderr_warning(message: str) -> None:
    print(f"gputui: warning: {message}", file=sys.stderr)


def untrusted_reason(path: Path, uid: int | None = None) -> str | None:
    """Why `path` must not be read implicitly, or None when it may.

    Both the directory entry (a symlink someone else planted) and the file it
    leads to must belong to `uid` (default: the real uid) or root, and the file
    must not be writable by others (group-writable is left alone: with per-user
    groups, umask 002 makes every file so).
    """
    me = os.getuid() if uid is None else uid
    trusted = {me, 0}
    try:
        link = path.lstat()
        target = path.stat()
    except OSError as exc:
        return f"cannot check it ({exc.strerror or exc})"
    for what, st in (("the link", link), ("the file", target)):
        if st.st_uid not in trusted:
            return f"{what} belongs to uid {st.st_uid}, not to you or root"
    if not stat.S_ISREG(target.st_mode):
        return "it is not a regular file"
    if target.st_mode & stat.S_IWOTH:
        return "anyone may write to it"
    return None


def resolve_models_path(
    given: Path | None, cwd: Path | None = None, *, warn: Warn | None = None
) -> tuple[Path, str]:
    """The models file and a label saying where it came from.

    `warn` receives one line when `./gputui.toml` is skipped (default: stderr).
    """
    if given is not None:
        if not pathprobe.present(given):
            raise UserError(f"{pathprobe.short(given)}: no such models file")
        regular_stat(given)  # a FIFO or device is refused before anything opens it
        return given, "given"
    local = (cwd or Path.cwd()) / LOCAL_NAME
    entry = pathprobe.probe(local, follow=False)
    if entry is not None and (stat.S_ISREG(entry.st_mode) or stat.S_ISLNK(entry.st_mode)):
        reason = untrusted_reason(local)
        if reason is None:
            return local, f"./{LOCAL_NAME}"
        (warn or _stderr_warning)(
            f"not reading {visible(str(local))}: {reason}; using the next models file"
        )
    user = user_models_file()
    if pathprobe.is_file(user):  # follows links; a FIFO or device is not a candidate
        return user, "user config"
    return shipped_examples(), "shipped examples"
