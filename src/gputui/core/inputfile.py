"""The one place that opens a file a user hands to gputui (models TOML, JSON, archives,
GGUF, safetensors), so each hostile-file rule is written once.

Every reader goes through `open_regular`:
  * a FIFO, socket or device is refused by `os.stat` before `open` (opening a FIFO
    blocks until a writer comes, forever in practice); the open itself uses
    O_NONBLOCK and the opened descriptor is checked again (fstat), which closes
    the race where the path is swapped between the stat and the open;
  * a text or JSON file is refused by its size (stat) before a byte is read, so a
    300 MB `./gputui.toml` costs nothing;
  * JSON nesting depth is bounded (json's C scanner stops cleanly at the recursion
    limit; below it the parsed value is walked without recursion) and integers are
    bounded by their digit count (`parse_int`), so neither a RecursionError nor
    Python's int-digit ValueError can escape, and no caller's recursive walk meets
    a value nested deeper than the bound;
  * a zip member (`.keras` config.json) is read in bounded chunks, never trusting
    the declared size, and encrypted or unsupported-compression members are refused.
Failures are one `UserError` line, `FILE: reason`, exit 2. Standard library only,
and `json` / `zipfile` are imported when needed: this module is on start-up paths.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from gputui.core.errors import UserError
from gputui.core.textsafe import visible

if TYPE_CHECKING:
    import zipfile

MiB = 1 << 20
#: Size caps, checked by stat before reading. Real files are far smaller (KBs).
TOML_CAP = 16 * MiB
JSON_CAP = 32 * MiB
#: A .keras archive: its config.json inflated, its member count, its central directory.
ZIP_MEMBER_CAP = 32 * MiB
ZIP_MAX_MEMBERS = 4096
ZIP_MAX_DIRECTORY = 4 * MiB
#: JSON bounds: nesting (a Keras model nests a dozen levels; a few hundred would break
#: every recursive walker) and digits of one integer (no model field needs 100).
JSON_MAX_DEPTH = 128
JSON_MAX_DIGITS = 100

_CONTAINERS = (dict, list)
_LONG_DIGITS = re.compile(f"[0-9]{{{JSON_MAX_DIGITS + 1}}}")
_KINDS = (
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISDIR, "a directory"),
)


class InputError(ValueError):
    """A reason without the file name (the caller adds it), with a line when known."""

    def __init__(self, reason: str, line: int | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.line = line


def shown(path: Path | str) -> str:
    """A path as it may be printed (control characters made visible)."""
    return visible(str(path))


def _what(mode: int) -> str:
    for test, name in _KINDS:
        if test(mode):
            return name
    return "not a regular file"


def _refuse_special(path: Path, mode: int) -> None:
    if not stat.S_ISREG(mode):
        raise UserError(f"{shown(path)}: not a regular file, {_what(mode)}")


def _cannot(path: Path, exc: OSError) -> UserError:
    return UserError(f"{shown(path)}: cannot read: {visible(exc.strerror or str(exc))}")


def regular_stat(path: Path) -> os.stat_result:
    """`os.stat(path)` of a regular file; anything else is a one-line UserError."""
    try:
        st = os.stat(path)
    except (OSError, ValueError) as exc:  # ValueError: a NUL in the path
        if isinstance(exc, OSError):
            raise _cannot(path, exc) from None
        raise UserError(f"{shown(path)}: cannot read: invalid path") from None
    _refuse_special(path, st.st_mode)
    return st


def open_regular(path: Path) -> IO[bytes]:
    """`path` opened for binary reading, refused unless it is a regular file."""
    regular_stat(path)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    flags |= getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise _cannot(path, exc) from None
    try:
        _refuse_special(path, os.fstat(fd).st_mode)  # swapped since the stat?
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def file_size(handle: IO[bytes]) -> int:
    """The size of an opened file (from its descriptor, not its name)."""
    return os.fstat(handle.fileno()).st_size


def _size_text(n: int) -> str:
    return f"{n / MiB:.1f} MiB" if n >= MiB else f"{n:,} bytes"


def read_capped(path: Path, cap: int, what: str = "file", where: str | None = None) -> bytes:
    """The whole file, refused by its size (stat, before reading) when over `cap`;
    `where` is how the file is named in messages (default: the path, made visible)."""
    name = shown(path) if where is None else where
    with open_regular(path) as handle:
        size = file_size(handle)
        if size > cap:
            raise UserError(
                f"{name}: {what} is {_size_text(size)}, over the {cap // MiB} MiB limit"
            )
        try:
            raw = handle.read(cap + 1)
        except OSError as exc:
            raise _cannot(path, exc) from None
    if len(raw) > cap:  # grew since the stat
        raise UserError(f"{name}: {what} is over the {cap // MiB} MiB limit")
    return raw


def read_text(path: Path, cap: int = TOML_CAP, what: str = "file", where: str | None = None) -> str:
    """The file as UTF-8 text (a BOM is dropped), size-capped; errors name the line."""
    raw = read_capped(path, cap, what, where)
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        name = shown(path) if where is None else where
        raise UserError(f"{name}:{line}: not UTF-8 text") from None


# --- files a command-line option names -------------------------------------------------------

#: Small files an option names (a password file, a PEM certificate, key or CA bundle).
SMALL_CAP = 1 * MiB


def _option_name(option: str, path: Path) -> str:
    return f"{option}: {shown(path)}"


def check_option_file(path: Path, option: str, cap: int = TOML_CAP) -> os.stat_result:
    """The stat of the regular file `option` names, refused by kind and by size before use.

    For a file that something else opens by its name later (the TLS library, a
    loader with its own checks): the errors name the option, e.g.
    `--tls-key: key.pem: not a regular file, a FIFO (named pipe)`.
    """
    try:
        st = regular_stat(path)
    except UserError as exc:
        if not os.path.lexists(path):  # False for a NUL in the name too
            raise UserError(f"{_option_name(option, path)}: no such file") from None
        raise UserError(f"{option}: {exc}") from None
    if st.st_size > cap:
        raise UserError(
            f"{_option_name(option, path)}: {_size_text(st.st_size)}, over the "
            f"{cap // MiB} MiB limit"
        )
    return st


def check_path_name(path: Path, option: str) -> None:
    """A path the OS refuses by its name alone (too long, a loop of links, no permission to
    look) is one line naming the option; a missing file is left to the caller's message."""
    try:
        os.stat(path)
    except FileNotFoundError:
        return
    except (OSError, ValueError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else "invalid path"
        raise UserError(f"{_option_name(option, path)}: {visible(reason)}") from None


def read_option_text(path: Path, option: str, cap: int = SMALL_CAP) -> str:
    """The UTF-8 text of the file `option` names: `read_text`'s rules, errors naming the option."""
    check_option_file(path, option, cap)
    try:
        return read_text(path, cap, "file", _option_name(option, path))
    except UserError as exc:
        text = str(exc)
        if text.startswith(_option_name(option, path)):
            raise
        raise UserError(f"{option}: {text}") from None


# --- JSON ---------------------------------------------------------------------------------


def too_deep(value: Any, max_depth: int) -> bool:
    """Whether parsed JSON nests containers deeper than `max_depth`: walked level by level
    (no recursion), containers only."""
    level = [value] if type(value) in _CONTAINERS else []
    depth = 0
    while level:
        depth += 1
        if depth > max_depth:
            return True
        below: list[Any] = []
        for item in level:
            children = item.values() if type(item) is dict else item
            below += [c for c in children if type(c) in _CONTAINERS]
        level = below
    return False


def _bounded_int(digits: str) -> int:
    if len(digits.lstrip("-")) > JSON_MAX_DIGITS:
        raise InputError(f"an integer of {len(digits)} digits (at most {JSON_MAX_DIGITS})")
    return int(digits)


def json_value(text: str, max_depth: int = JSON_MAX_DEPTH) -> Any:
    """`json.loads(text)` with bounded nesting and integer digits; InputError otherwise."""
    import json

    # The digit bound needs a Python call per integer: only where a long run of digits is.
    hook = _bounded_int if _LONG_DIGITS.search(text) else None
    try:
        value = json.loads(text, parse_int=hook)
    except json.JSONDecodeError as exc:
        raise InputError(exc.msg, exc.lineno) from None
    except RecursionError:  # json's C scanner stops at the recursion limit, cleanly
        raise InputError(f"nested more than {max_depth} levels deep") from None
    except ValueError as exc:  # parse_int's InputError (a ValueError), or any other
        if isinstance(exc, InputError):
            raise
        raise InputError(visible(str(exc)).split(":")[0]) from None
    # No file nests deeper than it has brackets: most files are done after two counts.
    if text.count("[") + text.count("{") > max_depth and too_deep(value, max_depth):
        raise InputError(f"nested more than {max_depth} levels deep")
    return value


def parse_json(raw: bytes | str, name: str, max_depth: int = JSON_MAX_DEPTH) -> Any:
    """JSON from bytes or text; errors are `name:LINE: invalid JSON: reason` (name is shown as is)."""
    if isinstance(raw, bytes):
        try:
            text = raw.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            line = raw.count(b"\n", 0, exc.start) + 1
            raise UserError(f"{name}:{line}: not UTF-8 text") from None
    else:
        text = raw
    try:
        return json_value(text, max_depth)
    except InputError as exc:
        at = f":{exc.line}" if exc.line is not None else ""
        raise UserError(f"{name}{at}: invalid JSON: {exc.reason}") from None


def read_json(path: Path, cap: int = JSON_CAP, what: str = "JSON file") -> Any:
    """The parsed JSON file at `path`, size-capped, depth- and digit-bounded."""
    return parse_json(read_capped(path, cap, what), shown(path))


# --- zip archives (.keras) -----------------------------------------------------------------


def _zip_directory(handle: IO[bytes], size: int) -> tuple[int, int] | None:
    """(member count, central directory bytes) from the end record, or None when absent
    (zipfile then says what is wrong). Read before zipfile parses the directory."""
    import struct

    tail_len = min(size, 22 + 0xFFFF)
    handle.seek(size - tail_len)
    tail = handle.read(tail_len)
    at = tail.rfind(b"PK\x05\x06")
    if at < 0 or at + 22 > len(tail):
        return None
    count, directory = struct.unpack_from("<HI", tail, at + 10)
    locator = at - 20
    zip64 = count == 0xFFFF or directory == 0xFFFFFFFF
    if zip64 and locator >= 0 and tail[locator : locator + 4] == b"PK\x06\x07":
        (end64,) = struct.unpack_from("<Q", tail, locator + 8)
        if end64 + 56 <= size:
            handle.seek(end64)
            record = handle.read(56)
            if record[:4] == b"PK\x06\x06" and len(record) == 56:
                count, directory = struct.unpack_from("<QQ", record, 32)
    return count, directory


def _zip_errors() -> tuple[type[BaseException], ...]:
    import zipfile
    import zlib

    return (
        zipfile.BadZipFile,
        zlib.error,
        OSError,
        EOFError,
        ValueError,
        OverflowError,
        NotImplementedError,
        RuntimeError,
        UnicodeDecodeError,
    )


def read_zip_member(path: Path, member: str, cap: int = ZIP_MEMBER_CAP) -> bytes | None:
    """One member of the zip archive at `path`, or None when it has no such member.

    Refused: more than ZIP_MAX_MEMBERS members, an encrypted member, a compression
    other than stored/deflate, or a member inflating past `cap` (counted while
    inflating, whatever size the archive declares).
    """
    import zipfile

    name = shown(path)
    errors = _zip_errors()
    with open_regular(path) as handle:
        try:
            found = _zip_directory(handle, file_size(handle))
            if found is not None and found[0] > ZIP_MAX_MEMBERS:
                raise UserError(
                    f"{name}: zip archive of {found[0]:,} members (at most {ZIP_MAX_MEMBERS:,})"
                )
            if found is not None and found[1] > ZIP_MAX_DIRECTORY:
                raise UserError(
                    f"{name}: zip directory of {_size_text(found[1])} "
                    f"(at most {ZIP_MAX_DIRECTORY // MiB} MiB)"
                )
            handle.seek(0)
            with zipfile.ZipFile(handle) as archive:
                try:
                    info = archive.getinfo(member)
                except KeyError:
                    return None
                _check_member(name, info, cap)
                with archive.open(info) as stream:
                    data = stream.read(cap + 1)
        except UserError:
            raise
        except errors as exc:
            reason = visible(str(exc)) or type(exc).__name__
            raise UserError(f"{name}: unreadable zip archive: {reason}") from None
    if len(data) > cap:
        raise UserError(f"{name}!{visible(member)}: inflates past {cap // MiB} MiB")
    return data


def _check_member(name: str, info: zipfile.ZipInfo, cap: int) -> None:
    import zipfile

    where = f"{name}!{visible(info.filename)}"
    if info.flag_bits & 0x1:
        raise UserError(f"{where}: encrypted zip member")
    if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
        raise UserError(
            f"{where}: zip compression method {info.compress_type} (supported: 0 stored, 8 deflate)"
        )
    if info.file_size > cap:
        raise UserError(
            f"{where}: declares {_size_text(info.file_size)} (at most {cap // MiB} MiB)"
        )
