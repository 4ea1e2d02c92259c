"""One CLI run in process, judged as the user sees it (shared by the graph fuzz families)."""

from __future__ import annotations

import contextlib
import io
import re
from collections.abc import Callable, Sequence
from random import Random
from typing import Any

import generators as gen

# What may reach the terminal: printable text, newlines and tabs (no C0/C1 controls,
# no bidi overrides).
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def cli_outcome(
    main: Callable[[list[str]], int], argv: Sequence[str], planted: list[str]
) -> gen.Outcome:
    """Exit 0/1 with output (a wrong accept when something invalid was planted), or exit 2
    with exactly one line on stderr; any other exit, or a control character, is a failure."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    stdout, stderr = out.getvalue(), err.getvalue()
    for stream, text in (("stdout", stdout), ("stderr", stderr)):
        found = _CONTROL.search(text)
        if found:
            return gen.Outcome("wrong-accept", f"control character in {stream} | {found.group()!r}")
    if code == 2:
        lines = stderr.splitlines()
        if len(lines) != 1 or stdout:
            return gen.Outcome(
                "wrong-accept", f"exit 2 without exactly one line | {stderr[:120]!r}"
            )
        return gen.Outcome("rejected", lines[0])
    if code not in (0, 1):
        return gen.Outcome("wrong-accept", f"exit {code} | {stderr[:120]!r}")
    if not stdout:
        return gen.Outcome("wrong-accept", f"exit {code} with no output | {stderr[:120]!r}")
    if planted:
        what = planted[0].split(" = ")[0].split(" (")[0]
        return gen.Outcome("wrong-accept", f"accepted invalid {what} | {planted[0]}")
    return gen.OK


def nested_json(rng: Random) -> Any:
    """A list or object nested 2 to 300 levels deep (built without recursion)."""
    value: Any = 1
    for _ in range(rng.choice([2, 10, 70, 300])):
        value = [value] if rng.random() < 0.5 else {"a": value}
    return value
