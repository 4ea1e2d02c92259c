"""Where snapshots come from: NVML, the host, simulated GPUs, a Prometheus server.

The public API, documented in docs/api.md: the names in `__all__`, loaded on first
use (`gputui snapshot`'s fast path imports no source it does not open, nor typing).
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from gputui.sources.base import Source, SourceKind, open_source
    from gputui.sources.errors import SourceUnavailable
    from gputui.sources.prometheus.api import PrometheusError
    from gputui.sources.prometheus.source import PrometheusSource
    from gputui.sources.prometheus.view import ViewData, ViewReader
    from gputui.sources.simulated.source import SimulatedSource

# public name -> (module, name in it)
_PUBLIC = {
    "PrometheusError": ("gputui.sources.prometheus.api", "PrometheusError"),
    "PrometheusSource": ("gputui.sources.prometheus.source", "PrometheusSource"),
    "SimulatedSource": ("gputui.sources.simulated.source", "SimulatedSource"),
    "Source": ("gputui.sources.base", "Source"),
    "SourceKind": ("gputui.sources.base", "SourceKind"),
    "SourceUnavailable": ("gputui.sources.errors", "SourceUnavailable"),
    "ViewData": ("gputui.sources.prometheus.view", "ViewData"),
    "ViewReader": ("gputui.sources.prometheus.view", "ViewReader"),
    "open_source": ("gputui.sources.base", "open_source"),
}

__all__ = [
    "PrometheusError",
    "PrometheusSource",
    "SimulatedSource",
    "Source",
    "SourceKind",
    "SourceUnavailable",
    "ViewData",
    "ViewReader",
    "open_source",
]


def __getattr__(name: str) -> object:
    """A public name, imported on first use (PEP 562)."""
    where = _PUBLIC.get(name)
    if where is None:
        raise AttributeError(f"module 'gputui.sources' has no attribute {name!r}")
    import sys

    __import__(where[0])
    value = getattr(sys.modules[where[0]], where[1])
    globals()[name] = value
    return value
