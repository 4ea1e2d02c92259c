"""What a telemetry source is, and how the CLI and TUI pick one.

Every source is blocking: `poll()` may take tens of milliseconds (NVML ioctls,
PCIe sampling, /proc reads). Callers in the TUI run it in a worker thread.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol

from gputui.telemetry.snapshot import Snapshot

if TYPE_CHECKING:
    from gputui.telemetry.nvml import Detail

SourceKind = Literal["auto", "nvml", "demo"]


class SourceUnavailable(Exception):
    """The source cannot start; `reason` is one human sentence for the UI and CLI."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class Source(Protocol):
    name: str

    def poll(self) -> Snapshot: ...

    def close(self) -> None: ...


def open_source(
    kind: SourceKind = "auto",
    scenario: Path | None = None,
    *,
    with_host: bool = True,
    detail: Detail = "full",
    one_shot: bool = False,
) -> tuple[Source, str | None]:
    """Open a source of the requested kind.

    Returns the source and, when `auto` fell back to the simulated GPUs, NVML's
    reason (the banner text). `nvml` raises SourceUnavailable instead of falling
    back. Imports are local so `gputui snapshot --demo` never loads pynvml and
    the NVML path never loads the simulator. `detail="table"` asks NVML only for
    what `gputui snapshot`'s text table prints (see telemetry/nvml.py); the
    simulator computes everything anyway, so it has no such option. `one_shot`:
    one poll follows, so NVML's host details come from /proc without psutil.
    """
    if kind == "demo":
        from gputui.telemetry.simulated import SimulatedSource

        return SimulatedSource.from_scenario(scenario, with_host=with_host), None
    from gputui.telemetry.nvml import NvmlSource

    try:
        return NvmlSource.open(with_host=with_host, detail=detail, one_shot=one_shot), None
    except SourceUnavailable as exc:
        if kind == "nvml":
            raise
        from gputui.telemetry.simulated import SimulatedSource

        return SimulatedSource.from_scenario(scenario, with_host=with_host), exc.reason
