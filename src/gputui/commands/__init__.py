"""One module per subcommand: `register(subparsers)` adds its parser, `run(args)` does the work.

Modules here import only argparse at top level; heavy imports go inside `run`.
`path_arg` is their argparse type for file arguments; `add_source_arguments` adds
`--source` and the sources' options from the registry (sources/registry.py).
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (see sources/base.py)
if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable
    from pathlib import Path
    from typing import Any

    from gputui.sources.base import Source, SourceKind


def path_arg(text: str) -> Path:
    """argparse's `type=` for a file: a Path, with pathlib imported only when one is given.

    pathlib pulls in urllib.parse and ipaddress (~3-5 ms); `gputui snapshot` without
    --scenario needs none of them.
    """
    from pathlib import Path

    return Path(text)


def checked_scenario(given: Path) -> Path:
    """`--scenario`: the user's path when anything is there (the input boundary then judges
    what it is: a FIFO, a folder), else a shipped scenario by that name; neither is one line
    naming the shipped ones. A name the OS refuses (too long, a loop) is one line too."""
    from gputui.core import pathprobe
    from gputui.core.errors import UserError
    from gputui.core.resources import scenario_path, shipped_scenarios

    if pathprobe.present(given):
        return given
    found = scenario_path(given)
    if found != given and pathprobe.is_file(found):
        return found
    names = ", ".join(shipped_scenarios())
    raise UserError(
        f"--scenario: {pathprobe.short(given)}: scenario file not found (shipped scenarios: {names})"
    )


def source_help(scope: str | None = None) -> str:
    """--source's help: each entry of the registry, in its own words."""
    from gputui.sources import registry

    each = "; ".join(f"{'/'.join(e.names)}: {e.help}" for e in registry.entries(scope))
    return f"{each} (default {registry.DEFAULT})"


def add_source_arguments(
    parser: argparse.ArgumentParser,
    scope: str | None = None,
    path_type: Callable[[str], object] = path_arg,
) -> None:
    """--source with the registry's choices (of `scope`: "host" for a command that serves
    one machine), and every option those sources read, as each source declares it."""
    from gputui.sources import registry

    parser.add_argument(
        "--source",
        choices=list(registry.choices(scope)),
        default=registry.DEFAULT,
        help=source_help(scope),
    )
    for option in registry.options(scope):
        if option.kind == "path":
            parser.add_argument(
                option.flag, dest=option.dest, metavar=option.metavar, help=option.help,
                type=path_type,
            )  # fmt: skip
        else:
            parser.add_argument(
                option.flag, dest=option.dest, metavar=option.metavar, help=option.help
            )


def open_given_source(
    args: Any, *, with_host: bool = True, kind: SourceKind | None = None
) -> tuple[Source, str | None]:
    """`--source` with every registry option the command line gave: the source and, when
    `auto` fell back, why; NVML's failure, a file a source cannot read and an option the
    source does not read are each one line (UserError)."""
    from gputui.core.errors import UserError
    from gputui.sources import registry
    from gputui.sources.base import open_source
    from gputui.sources.errors import SourceUnavailable

    given = {o.dest: getattr(args, o.dest, None) for o in registry.options()}
    try:
        return open_source(kind or args.source, with_host=with_host, options=given)
    except SourceUnavailable as exc:
        raise UserError(f"NVML is not usable: {exc.reason}") from None
    except (OSError, ValueError) as exc:  # a file the source could not read
        raise UserError(str(exc)) from None
