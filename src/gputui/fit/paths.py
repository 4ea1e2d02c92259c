"""Where the models file comes from when the user names none."""

from __future__ import annotations

from pathlib import Path

from gputui.errors import UserError

LOCAL_NAME = "gputui.toml"


def shipped_examples() -> Path:
    """The example models inside the package (a copy of the repository's examples/models.toml)."""
    return Path(__file__).resolve().parent / "examples" / "models.toml"


def user_models_file() -> Path:
    import platformdirs

    return Path(platformdirs.user_config_dir("gputui")) / "models.toml"


def resolve_models_path(given: Path | None, cwd: Path | None = None) -> tuple[Path, str]:
    """The models file and a label saying where it came from."""
    if given is not None:
        if not given.is_file():
            raise UserError(f"{given}: no such models file")
        return given, "given"
    local = (cwd or Path.cwd()) / LOCAL_NAME
    if local.is_file():
        return local, f"./{LOCAL_NAME}"
    user = user_models_file()
    if user.is_file():
        return user, "user config"
    return shipped_examples(), "shipped examples"
