"""What a telemetry source is, and how the CLI and TUI pick one.

Every source is blocking: `poll()` may take tens of milliseconds (NVML ioctls,
PCIe sampling, /proc reads). Callers in the TUI run it in a worker thread.
"""

from __future__ import annotations

from gputui.model.snapshot import Snapshot
from gputui.sources.errors import SourceUnavailable

# `typing` costs ~3 ms of import, and `gputui snapshot` needs nothing of it at run time:
# the modules on that path test this constant instead of typing.TYPE_CHECKING (mypy
# treats any name TYPE_CHECKING as True), and keep typing's names for the type checker.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Literal, Protocol

    from gputui.sources.nvml.reading import Detail

    SourceKind = Literal["auto", "nvml", "demo"]

    class Source(Protocol):
        """What a telemetry source offers; checked structurally by mypy."""

        name: str

        def poll(self) -> Snapshot: ...

        def close(self) -> None: ...

else:
    SourceKind = str  # at run time only a name for annotations: "auto", "nvml" or "demo"

    class Source:
        """At run time only a name for annotations; mypy sees the Protocol above."""


def open_source(
    kind: SourceKind = "auto",
    scenario: Path | None = None,
    *,
    with_host: bool = True,
    detail: Detail = "full",
) -> tuple[Source, str | None]:
    """Open a source of the requested kind.

    Returns the source and, when `auto` fell back to the simulated GPUs, NVML's
    reason (the banner text). `nvml` raises SourceUnavailable instead of falling
    back. Imports are local so `gputui snapshot --demo` never loads pynvml and
    the NVML path never loads the simulator. `detail="table"` asks NVML only for
    what `gputui snapshot`'s text table prints (see sources/nvml/source.py); the
    simulator computes everything anyway, so it has no such option.
    """
    if kind == "demo":
        from gputui.sources.simulated.source import SimulatedSource

        return SimulatedSource.from_scenario(scenario, with_host=with_host), None
    from gputui.sources.nvml.source import NvmlSource

    try:
        return NvmlSource.open(with_host=with_host, detail=detail), None
    except SourceUnavailable as exc:
        if kind == "nvml":
            raise
        from gputui.sources.simulated.source import SimulatedSource

        return SimulatedSource.from_scenario(scenario, with_host=with_host), exc.reason
