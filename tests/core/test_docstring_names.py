"""Every dotted gputui name a docstring or comment in src/ gives (`gputui.fit.entry`,
`fit.core.roofline`, `sources.base.open_source`) names a module or attribute that
exists: a name left behind by a move sends a newcomer to a file that is not there."""

from __future__ import annotations

import importlib
import importlib.util
import io
import re
import tokenize
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "gputui"
PACKAGES = ("fit", "sources", "exporter", "commands", "render", "tui", "catalog", "history")
DOTTED = re.compile(
    r"(?<![\w./-])(?:gputui\.)?((?:" + "|".join(PACKAGES) + r")(?:\.[A-Za-z_][A-Za-z_0-9]*)+)"
)
FILE_SUFFIXES = (".py", ".md", ".toml", ".json")


def resolves(name: str) -> bool:
    """`gputui.<name>`: the longest importable module prefix, then attributes of it."""
    parts = f"gputui.{name}".split(".")
    for k in range(len(parts), 1, -1):
        module = ".".join(parts[:k])
        try:
            found = importlib.util.find_spec(module) is not None
        except ImportError:
            found = False
        if not found:
            continue
        obj: object = importlib.import_module(module)
        for attr in parts[k:]:
            if not hasattr(obj, attr):
                return False
            obj = getattr(obj, attr)
        return True
    return False


def prose(path: Path) -> list[tuple[int, str]]:
    """(line, text) of the file's comments and string literals (docstrings among them)."""
    tokens = tokenize.generate_tokens(io.StringIO(path.read_text(encoding="utf-8")).readline)
    return [(t.start[0], t.string) for t in tokens if t.type in (tokenize.COMMENT, tokenize.STRING)]


def test_every_dotted_name_in_docstrings_and_comments_exists() -> None:
    checked, dead = 0, []
    for path in sorted(SRC.rglob("*.py")):
        for line, text in prose(path):
            for match in DOTTED.finditer(text):
                name = match.group(1).rstrip(".")
                if name.endswith(FILE_SUFFIXES):
                    continue
                checked += 1
                if not resolves(name):
                    dead.append(f"{path.relative_to(SRC)}:{line}: {name}")
    assert checked > 50
    assert not dead, "\n".join(dead)
