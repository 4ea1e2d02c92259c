"""The registry of sources: each one's name, options and how it opens, without importing it.

Like harlequin's adapters, a source declares its name and its options, and the
command line builds `--source`'s choices and those options from here (commands/tui.py,
commands/exporter.py), so a new source is one entry, not edits in every command.

Entries are light data: the class is named as "module:Class" and imported only
by `open_source` (sources/base.py), so `gputui --demo` never imports pynvml nor
the Prometheus client, and this module imports nothing at all: the dashboard's
command line reads it before argparse.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (see sources/base.py)
if TYPE_CHECKING:
    from collections.abc import Iterator


class SourceOption:
    """A command-line option a source reads, e.g. `--scenario FILE`.

    `dest` is its key in the options an opener receives (argparse's attribute name);
    `kind` is "path" (a file the user names) or "text".
    """

    __slots__ = ("dest", "flag", "help", "kind", "metavar")

    def __init__(self, flag: str, *, metavar: str, help: str, kind: str = "text") -> None:
        if kind not in ("path", "text"):
            raise ValueError(f"{flag}: kind {kind!r} is neither 'path' nor 'text'")
        self.flag = flag
        self.dest = flag.lstrip("-").replace("-", "_")
        self.metavar = metavar
        self.help = help
        self.kind = kind

    def __repr__(self) -> str:
        return f"SourceOption({self.flag!r})"


class SourceEntry:
    """One source the command line can pick with `--source NAME`.

    - `opener`: "module:Class" of a `Source` whose `from_options(options)` opens it,
      imported only when opened; empty for a policy entry (`tries`).
    - `tries`: a policy instead of a source: open these in order, the next when one
      raises SourceUnavailable (`auto`).
    - `scope`: "host" (one machine's GPUs: the dashboard, `gputui exporter`) or
      "fleet" (many hosts: the dashboard's cluster view).
    - `required`: the options without which it cannot open.
    """

    __slots__ = ("aliases", "help", "name", "opener", "options", "required", "scope", "tries")

    def __init__(
        self,
        name: str,
        *,
        help: str,
        opener: str = "",
        options: tuple[SourceOption, ...] = (),
        aliases: tuple[str, ...] = (),
        scope: str = "host",
        tries: tuple[str, ...] = (),
        required: tuple[str, ...] = (),
    ) -> None:
        if bool(opener) == bool(tries):
            raise ValueError(f"source {name!r}: give an opener or what it tries, not both")
        self.name = name
        self.help = help
        self.opener = opener
        self.options = options
        self.aliases = aliases
        self.scope = scope
        self.tries = tries
        self.required = required

    @property
    def names(self) -> tuple[str, ...]:
        return (self.name, *self.aliases)

    def __repr__(self) -> str:
        return f"SourceEntry({self.name!r})"


SCENARIO = SourceOption(
    "--scenario", metavar="FILE", kind="path", help="simulated-GPU scenario TOML file"
)
RECORDING = SourceOption(
    "--recording",
    metavar="FILE",
    kind="path",
    help="with --source replay: the recording to play (gputui record's file)",
)
PROMETHEUS_URL = SourceOption(
    "--prometheus", metavar="URL", help="the cluster view: every GPU a Prometheus server holds"
)
PROMETHEUS_MATCH = SourceOption(
    "--match",
    metavar="SELECTOR",
    help="with --prometheus: only these series, e.g. '{job=\"gpu\"}'",
)

# In --source's order; the first is the default.
ENTRIES: tuple[SourceEntry, ...] = (
    SourceEntry(
        "auto",
        help="NVML when it works, else simulated GPUs (with a banner)",
        tries=("nvml", "simulated"),
        options=(SCENARIO,),
    ),
    SourceEntry(
        "nvml",
        help="this host's NVIDIA GPUs through NVML, or an error",
        opener="gputui.sources.nvml.source:NvmlSource",
    ),
    SourceEntry(
        "simulated",
        aliases=("demo",),
        help="simulated GPUs from a scenario file (default: the shipped demo)",
        opener="gputui.sources.simulated.source:SimulatedSource",
        options=(SCENARIO,),
    ),
    SourceEntry(
        "replay",
        help="a recording played at its own pace (needs --recording FILE)",
        opener="gputui.sources.replay.source:ReplaySource",
        options=(RECORDING,),
        required=("recording",),
    ),
    SourceEntry(
        "prometheus",
        help="a fleet's GPUs from a Prometheus server (needs --prometheus URL)",
        opener="gputui.sources.prometheus.source:PrometheusSource",
        options=(PROMETHEUS_URL, PROMETHEUS_MATCH),
        scope="fleet",
        required=("prometheus",),
    ),
)
DEFAULT = ENTRIES[0].name


def entries(scope: str | None = None) -> Iterator[SourceEntry]:
    """The entries, in order; only those of `scope` when given."""
    return (e for e in ENTRIES if scope is None or e.scope == scope)


def choices(scope: str | None = None) -> tuple[str, ...]:
    """`--source`'s choices: every entry's name and aliases."""
    return tuple(n for e in entries(scope) for n in e.names)


def sources() -> tuple[str, ...]:
    """The names of the entries that are sources (not a policy such as `auto`)."""
    return tuple(e.name for e in ENTRIES if e.opener)


def options(scope: str | None = None) -> tuple[SourceOption, ...]:
    """Every option the entries of `scope` read, once each, in order."""
    seen: dict[str, SourceOption] = {}
    for e in entries(scope):
        for option in e.options:
            seen.setdefault(option.flag, option)
    return tuple(seen.values())


def lookup(name: str) -> SourceEntry:
    """The entry a name or alias picks; KeyError with the choices when none does."""
    for e in ENTRIES:
        if name in e.names:
            return e
    raise KeyError(f"no source {name!r} (choices: {', '.join(choices())})")
