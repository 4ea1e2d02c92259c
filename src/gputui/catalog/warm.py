"""`python -m gputui.catalog.warm DIRECTORY`: validate a catalog directory and cache it.

Run by `gputui.catalog.loader` for a process that asked to keep pydantic out
(`validate_in_child`, the dashboard): this child imports pydantic, validates,
writes the cache (`gputui.catalog.cache`) and exits. Exit status 0 when the
catalog loaded, 2 when it was refused (the parent then validates it itself,
which gives the user the usual one-line error). Prints nothing.
"""

from __future__ import annotations

import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        return 2
    from gputui.catalog import load_catalog
    from gputui.core.errors import UserError

    try:
        load_catalog(Path(argv[0]))
    except UserError:
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
