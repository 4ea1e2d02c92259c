"""Dashboard settings that persist: `settings.toml` in the user config directory.

Read once at start; at exit what the user changed in the dashboard is written back:
the refresh interval, the sort column and direction, the process filter and "my
processes", the theme, and columns the user never wants (`hidden_columns`).
`--no-config` neither reads nor writes it.

The file is the user's: a bad value or an unknown key is one warning line and is
ignored, the valid values still apply, and the file is left as it is. Saving edits
it in place (`save_settings`, tomlkit): only the settings that changed are set, and
every other key, value, comment and blank line stays as written; nothing changed,
nothing written. A file gputui could not read whole (not UTF-8, not TOML, too big,
not a regular file) is never written. The write itself is core/userfile's: atomic,
through a symlink, and refused when the file changed on disk since it was read.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, NamedTuple

from gputui.core.textsafe import visible

FILE_NAME = "settings.toml"
MAX_BYTES = 64 * 1024
FILTER_MAX = 200
THEME_MAX = 64
KEPT_COLUMNS = ("gpu", "pid", "command")  # never hidden: a row needs them
ALERTS_KEY = "alerts"  # [alerts.RULE] tables: the alert rules (docs/alerts.md)


@dataclasses.dataclass(frozen=True)
class Settings:
    interval: float | None = None
    sort: str | None = None
    reverse: bool | None = None
    filter: str = ""
    mine: bool = False
    theme: str | None = None
    hidden_columns: tuple[str, ...] = ()


def settings_path() -> Path:
    import platformdirs

    return Path(platformdirs.user_config_dir("gputui")) / FILE_NAME


class SettingsError(ValueError):
    """One field's problem, in words: what is wrong and what is allowed."""


class Loaded(NamedTuple):
    """The settings read at start, the warning line if any, and whether the file was read
    whole (missing, or TOML gputui could read): only then may the dashboard edit it at exit."""

    settings: Settings
    warning: str | None
    whole: bool


def _column_keys() -> tuple[str, ...]:
    from gputui.tui.views.process_columns import COLUMN_KEYS

    return COLUMN_KEYS


def _interval(v: Any) -> float:
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
        raise SettingsError("must be a number of seconds")
    if not 0.1 <= v <= 3600:
        raise SettingsError(f"{v:g} is out of range (0.1 to 3600)")
    return float(v)


def _sort(v: Any) -> str:
    if not isinstance(v, str) or v not in _column_keys():
        raise SettingsError(f"must be one of {', '.join(_column_keys())}")
    return v


def _flag(v: Any) -> bool:
    if not isinstance(v, bool):
        raise SettingsError("must be true or false")
    return v


def _filter(v: Any) -> str:
    if not isinstance(v, str) or len(v) > FILTER_MAX:
        raise SettingsError(f"must be text of at most {FILTER_MAX} characters")
    return visible(v)


def _theme(v: Any) -> str:
    if not isinstance(v, str) or not v or len(v) > THEME_MAX:
        raise SettingsError("must be a theme name")
    return visible(v)


def _hidden_columns(v: Any) -> tuple[str, ...]:
    allowed = [k for k in _column_keys() if k not in KEPT_COLUMNS]
    if not isinstance(v, list | tuple) or not all(isinstance(x, str) and x in allowed for x in v):
        raise SettingsError(f"must be a list of {', '.join(allowed)}")
    return tuple(dict.fromkeys(v))


_FIELDS: dict[str, Callable[[Any], Any]] = {
    "interval": _interval,
    "sort": _sort,
    "reverse": _flag,
    "filter": _filter,
    "mine": _flag,
    "theme": _theme,
    "hidden_columns": _hidden_columns,
}


def parse(data: Mapping[str, Any]) -> tuple[Settings, list[str]]:
    """The valid settings in a parsed TOML table, and a `field: problem` line for each key
    that is unknown or holds a bad value (ignored: the defaults stand for those)."""
    out: dict[str, Any] = {}
    problems = []
    for key, value in data.items():
        if key == ALERTS_KEY:  # the alert rules' table: gputui.alerts.rules checks it
            continue
        check = _FIELDS.get(key)
        if check is None:
            problems.append(f"{visible(str(key))}: unknown setting")
            continue
        try:
            out[key] = check(value)
        except SettingsError as exc:
            problems.append(f"{key}: {exc}")
    return Settings(**out), problems


def _read(path: Path) -> tuple[str, dict[str, Any]]:
    """The file's text and table, through the input boundary; UserError when not whole."""
    from gputui.core.tomlsafe import read_toml  # tomllib: only for a file that is there

    return read_toml(path, what="settings file", max_bytes=MAX_BYTES, max_depth=4)


def load(path: Path) -> Loaded:
    """The settings in the file at `path`; a missing file is the defaults without a warning."""
    if not path.exists():
        return Loaded(Settings(), None, True)
    from gputui.core.errors import UserError

    try:
        _, data = _read(path)
    except UserError as exc:
        return Loaded(Settings(), f"{exc}; using defaults, and the file is not written", False)
    settings, problems = parse(data)
    if not problems:
        return Loaded(settings, None, True)
    shown = visible(str(path))
    return Loaded(settings, f"{shown}: {'; '.join(problems)}; ignored (kept in the file)", True)


def changes(before: Settings, after: Settings) -> dict[str, Any]:
    """The settings that differ between two states, as `save_settings` takes them."""
    return {
        f.name: getattr(after, f.name)
        for f in dataclasses.fields(Settings)
        if getattr(before, f.name) != getattr(after, f.name)
    }


def _plain(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


NEW_FILE_HEADER = (
    "# gputui dashboard settings. On exit the dashboard sets only what you changed in it;\n"
    "# your comments and other lines stay. --no-config ignores this file.\n"
)


def save_settings(path: Path, changed: Mapping[str, Any]) -> str | None:
    """Set `changed` (setting name -> value; None removes the key) in the settings file at
    `path`, edited in place; None when done (or nothing to do), else one warning line.

    Everything else in the file stays as written. Not written: a file that cannot be read
    whole now, a key the user made a table (`sort.x = 1`), an edit whose result would not
    read back as exactly the old settings plus `changed`, a file changed on disk meanwhile.
    """
    from gputui.core.errors import UserError
    from gputui.core.tomlsafe import parse_toml
    from gputui.core.userfile import replace_file

    shown = visible(str(path))
    wanted = {k: _plain(v) for k, v in changed.items()}
    _, problems = parse({k: v for k, v in wanted.items() if v is not None})
    if problems:
        return f"{shown}: settings not saved ({'; '.join(problems)})"
    if not wanted:
        return None
    try:
        text, data = _read(path) if path.exists() else (None, {})
    except UserError as exc:
        return f"{exc}; settings not saved"
    wanted = {k: v for k, v in wanted.items() if not isinstance(data.get(k), dict)}
    try:
        import tomlkit

        start = NEW_FILE_HEADER if text is None else text
        document = tomlkit.parse(start)
        for key, value in wanted.items():
            if value is not None:
                document[key] = value
            elif key in document:
                del document[key]
        edited = document.as_string()
    except Exception as exc:  # tomlkit refusing a file tomllib read: the file stays as it is
        return f"{shown}: settings not saved (cannot edit it in place: {type(exc).__name__})"
    if edited == start:
        return None
    # The edit is checked, not trusted: it must read back as the old table plus the changes.
    expected = {k: v for k, v in data.items() if k not in wanted}
    expected |= {k: v for k, v in wanted.items() if v is not None}
    try:
        if parse_toml(edited, shown, max_depth=4) != expected:
            raise UserError("an in-place edit would change other settings")
    except UserError as exc:
        return f"{shown}: settings not saved ({str(exc).rpartition(': ')[2]})"
    read = None if text is None else text.encode("utf-8")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        replace_file(
            path, edited.encode("utf-8"), new_mode=0o600, may_replace=lambda now: now == read
        )
    except OSError as exc:
        return f"{shown}: settings not saved ({visible(exc.strerror or str(exc))})"
    return None
