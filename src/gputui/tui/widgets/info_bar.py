"""The top line (host, versions, interval, clock, source) and the simulated-data banner.

Textual's Header reads the wall clock itself; ours takes an injected clock so
snapshot tests and screenshots are byte-for-byte reproducible.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text

from gputui.tui.views import formatting as fmt
from gputui.tui.widgets.field import Field


@dataclass(frozen=True)
class HeaderFacts:
    hostname: str
    driver: str | None
    cuda: str | None
    nvml: str | None
    interval_s: float
    clock: str
    source: str
    paused: bool = False
    readonly: bool = False
    filter: str = ""  # the process filter in force ("" none)
    mine: str | None = None  # "my processes" (m): whose
    alerts: int = 0  # alerts firing now (a: the alerts screen)


def header_text(f: HeaderFacts) -> Text:
    text = Text(no_wrap=True, overflow="ellipsis")
    text.append(" gputui ", style="bold reverse")
    text.append(f" {f.hostname}", style="bold")
    # Most-wanted first: a narrow terminal cuts the versions, not the clock or the source.
    text.append(f"  {f.clock}  every {f.interval_s:g} s")
    if f.paused:
        text.append("  PAUSED", style="bold reverse")
    if f.alerts:
        text.append(f"  ALERTS {f.alerts}", style="bold reverse red")
    # What hides processes or keys is said while it is in force, before the versions: a
    # filter or "mine" saved in settings.toml is applied silently at the next start.
    if f.readonly:
        text.append("  READ-ONLY", style="bold reverse")
    if f.mine is not None:
        text.append("  only ", style="bold")
        text.append(f.mine, style="bold reverse")
    if f.filter:
        text.append("  filter ", style="bold")
        text.append(f.filter, style="bold reverse")
    text.append(
        f"  {f.source}  driver {fmt.na(f.driver)}  CUDA {fmt.na(f.cuda)}  NVML {fmt.na(f.nvml)}"
    )
    return text


def banner_text(source: str, fallback_reason: str | None) -> str | None:
    if source == "nvml":
        return None
    if source == "replay":
        return "REPLAY of a recording: these GPUs and processes are not live"
    if fallback_reason:
        return f"SIMULATED GPUs, not yours: NVML is unusable ({fallback_reason})"
    return "SIMULATED GPUs, not yours (--demo)"


class InfoBar(Field):
    pass


class Banner(Field):
    pass
