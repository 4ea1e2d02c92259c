"""Dashboard settings that persist: `settings.toml` in the user config directory.

Read once at start, written when the dashboard exits: the refresh interval, the
sort column and direction, the process filter and "my processes", the theme,
and columns the user never wants (`hidden_columns`, edited by hand). `--no-config`
neither reads nor writes it. A file that cannot be read or holds a bad value is
one warning line and the defaults, never a crash and never half a file applied.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import os
import tempfile
from pathlib import Path
from typing import Any

from gputui.core.textsafe import visible

FILE_NAME = "settings.toml"
MAX_BYTES = 64 * 1024
FILTER_MAX = 200
THEME_MAX = 64
KEPT_COLUMNS = ("gpu", "pid", "command")  # never hidden: a row needs them


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
    """One line: the file and the field, and what is wrong."""


def _column_keys() -> tuple[str, ...]:
    from gputui.tui.views.process_columns import COLUMN_KEYS

    return COLUMN_KEYS


def parse(data: dict[str, Any], where: str) -> Settings:
    """The settings in a parsed TOML table; SettingsError names the first bad field."""
    known = {f.name for f in dataclasses.fields(Settings)}
    for key in data:
        if key not in known:
            raise SettingsError(f"{where}: {visible(str(key))}: unknown setting")
    out: dict[str, Any] = {}
    if "interval" in data:
        v = data["interval"]
        if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
            raise SettingsError(f"{where}: interval: must be a number of seconds")
        if not 0.1 <= v <= 3600:
            raise SettingsError(f"{where}: interval: {v:g} is out of range (0.1 to 3600)")
        out["interval"] = float(v)
    if "sort" in data:
        v = data["sort"]
        if not isinstance(v, str) or v not in _column_keys():
            raise SettingsError(f"{where}: sort: must be one of {', '.join(_column_keys())}")
        out["sort"] = v
    for name in ("reverse", "mine"):
        if name in data:
            if not isinstance(data[name], bool):
                raise SettingsError(f"{where}: {name}: must be true or false")
            out[name] = data[name]
    if "filter" in data:
        v = data["filter"]
        if not isinstance(v, str) or len(v) > FILTER_MAX:
            raise SettingsError(f"{where}: filter: must be text of at most {FILTER_MAX} characters")
        out["filter"] = visible(v)
    if "theme" in data:
        v = data["theme"]
        if not isinstance(v, str) or not v or len(v) > THEME_MAX:
            raise SettingsError(f"{where}: theme: must be a theme name")
        out["theme"] = visible(v)
    if "hidden_columns" in data:
        v = data["hidden_columns"]
        allowed = [k for k in _column_keys() if k not in KEPT_COLUMNS]
        if not isinstance(v, list) or not all(isinstance(x, str) and x in allowed for x in v):
            raise SettingsError(f"{where}: hidden_columns: must be a list of {', '.join(allowed)}")
        out["hidden_columns"] = tuple(dict.fromkeys(v))
    return Settings(**out)


def load(path: Path) -> tuple[Settings, str | None]:
    """(the settings, None), or (the defaults, one warning line) when the file is unusable;
    a missing file is the defaults without a warning."""
    if not path.exists():
        return Settings(), None
    from gputui.core.errors import UserError
    from gputui.core.tomlsafe import read_toml  # tomllib: only for a file that is there

    try:
        _, data = read_toml(path, what="settings file", max_bytes=MAX_BYTES, max_depth=4)
        return parse(data, visible(str(path))), None
    except UserError as exc:
        return Settings(), f"{exc}; using defaults"
    except SettingsError as exc:
        return Settings(), f"{exc}; using defaults"


def _toml_str(text: str) -> str:
    """A TOML basic string: quotes, backslashes and anything unprintable escaped."""
    body = "".join(
        "\\" + c if c in '"\\' else c if c.isprintable() else f"\\u{ord(c):04x}" for c in text
    )
    return f'"{body}"'


def dumps(s: Settings) -> str:
    lines = ["# gputui dashboard settings (written on exit; --no-config ignores this file)"]
    if s.interval is not None:
        lines.append(f"interval = {s.interval:g}")
    if s.sort is not None:
        lines.append(f"sort = {_toml_str(s.sort)}")
    if s.reverse is not None:
        lines.append(f"reverse = {'true' if s.reverse else 'false'}")
    lines.append(f"filter = {_toml_str(s.filter)}")
    lines.append(f"mine = {'true' if s.mine else 'false'}")
    if s.theme is not None:
        lines.append(f"theme = {_toml_str(s.theme)}")
    lines.append("hidden_columns = [" + ", ".join(_toml_str(c) for c in s.hidden_columns) + "]")
    return "\n".join(lines) + "\n"


def save(path: Path, s: Settings) -> str | None:
    """Write atomically (a temporary file renamed over it); a warning line on failure."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".settings-", suffix=".toml")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(dumps(s))
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
    except OSError as exc:
        return f"{visible(str(path))}: settings not saved ({exc.strerror or exc})"
    return None
