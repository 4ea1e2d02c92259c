"""What a telemetry source is, and how the CLI and TUI open one.

Every source is blocking: `poll()` may take tens of milliseconds (NVML ioctls,
PCIe sampling, /proc reads). Callers in the TUI run it in a worker thread.

`Source` is an abstract base class checked at run time (a class that forgets `poll`
or `close` cannot be built); `abc` is loaded by every interpreter at start-up, so it
costs `gputui snapshot` nothing. Which sources exist, their options and how each
opens are in sources/registry.py; `open_source` opens one by name.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

from gputui.model.snapshot import Snapshot
from gputui.sources.errors import SourceUnavailable

# `typing` costs ~3 ms of import, and `gputui snapshot` needs nothing of it at run time:
# the modules on that path test this constant instead of typing.TYPE_CHECKING (mypy
# treats any name TYPE_CHECKING as True), and keep typing's names for the type checker.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path
    from typing import Any, Literal

    from typing_extensions import Self

    from gputui.sources.registry import SourceEntry

    # What NVML reads: everything, or only `gputui snapshot`'s table (nvml/reading.py's
    # Detail, spelled here: nvml imports this module, not the other way round).
    Detail = Literal["full", "table"]

    # A name or alias in sources/registry.py (the registry, not this, is the list).
    SourceKind = Literal["auto", "nvml", "simulated", "demo", "replay", "prometheus"]
else:
    SourceKind = str  # at run time only a name for annotations


class Source(ABC):
    """What a telemetry source offers: `name` (Snapshot.source), `poll` and `close`."""

    name: str

    @abstractmethod
    def poll(self) -> Snapshot:
        """One reading of every GPU; blocking."""

    @abstractmethod
    def close(self) -> None:
        """Release what the source holds (NVML, sockets); safe to call twice."""

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> Self:
        """Open from the registry's options (`--scenario`, ...), plus `with_host` and
        `detail`. A wrapper that is never opened by name (a filter) keeps this default."""
        raise TypeError(f"{cls.__name__} is not opened by name")


def _open_one(name: str, options: Mapping[str, Any]) -> Source:
    from gputui.sources.registry import lookup

    module, _, attr = lookup(name).opener.partition(":")
    __import__(module)
    import sys

    cls = getattr(sys.modules[module], attr)
    source = cls.from_options(options)
    if not isinstance(source, Source):  # the registry names a class that is not a Source
        raise TypeError(f"source {name!r}: {attr} opened a {type(source).__name__}")
    return source


def _refuse_unread(entry: SourceEntry, given: Mapping[str, Any]) -> None:
    """A source option given to a source that does not read it is refused, not ignored
    (`--source demo --recording run.sqlite` would otherwise show the demo silently).
    Imports only on a refusal: every command opens a source, `gputui snapshot` included."""
    from gputui.sources.registry import options

    read = {option.dest for option in entry.options}
    for option in options():
        value = given.get(option.dest)
        if value is not None and option.dest not in read:
            from pathlib import PurePath

            from gputui.core.inputfile import shown

            named = shown(str(value)) if isinstance(value, PurePath) else repr(value)
            raise ValueError(f"{option.flag}: {named}: --source {entry.name} does not read it")


def open_source(
    kind: SourceKind = "auto",
    scenario: Path | None = None,
    *,
    with_host: bool = True,
    detail: Detail = "full",
    options: Mapping[str, Any] | None = None,
) -> tuple[Source, str | None]:
    """Open the source a name or alias of the registry picks.

    Returns the source and, when a policy entry (`auto`) fell back past a source, that
    source's reason (the banner text). A source opened by name raises SourceUnavailable
    instead of falling back. Its class is imported here, only when opened, so `gputui
    snapshot --demo` never loads pynvml and the NVML path never loads the simulator.
    `options` holds the registry's options by `dest`; `scenario` is `--scenario`'s.
    `detail="table"` asks NVML only for what `gputui snapshot`'s text table prints (see
    sources/nvml/source.py); the others compute everything anyway and ignore it.
    KeyError for a name the registry does not hold.
    """
    from gputui.sources.registry import lookup

    entry = lookup(kind)
    given = dict(options or {})
    given.setdefault("scenario", scenario)
    _refuse_unread(entry, given)
    given.update(with_host=with_host, detail=detail)
    if not entry.tries:
        return _open_one(entry.name, given), None
    reason: str | None = None
    for at, name in enumerate(entry.tries):
        try:
            return _open_one(name, given), reason
        except SourceUnavailable as exc:
            if at == len(entry.tries) - 1:
                raise
            reason = reason or exc.reason
    raise AssertionError(f"source {kind!r} tries nothing")  # the registry checks it does
