"""One module per subcommand: `register(subparsers)` adds its parser, `run(args)` does the work.

Modules here import only argparse at top level; heavy imports go inside `run`.
`path_arg` is their argparse type for file arguments.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (see sources/base.py)
if TYPE_CHECKING:
    from pathlib import Path


def path_arg(text: str) -> Path:
    """argparse's `type=` for a file: a Path, with pathlib imported only when one is given.

    pathlib pulls in urllib.parse and ipaddress (~3-5 ms); `gputui snapshot` without
    --scenario needs none of them.
    """
    from pathlib import Path

    return Path(text)


def checked_scenario(given: Path) -> Path:
    """`--scenario`: the user's file, else a shipped scenario by name; neither is one line
    naming the option and the shipped names (UserError, exit 2)."""
    from gputui.core.errors import UserError
    from gputui.core.resources import scenario_path, shipped_scenarios

    try:
        found = scenario_path(given)
        exists = found.is_file()
    except (OSError, ValueError) as exc:  # a name too long, a NUL byte, a link loop
        raise UserError(f"--scenario: {given}: cannot be read ({exc.__class__.__name__})") from None
    if not exists:
        names = ", ".join(shipped_scenarios())
        raise UserError(f"--scenario: {given}: no such file (shipped scenarios: {names})")
    return found
