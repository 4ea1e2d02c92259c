"""The one `assumptions` object of a fit JSON entry, for every model kind.

What an estimate assumed beyond its file: the runtime that runs the model (and whether
it is modelled), the training loop for a training job that has one, the serving engine
for generation. One builder, so each kind fills the same keys.
"""

from __future__ import annotations

from typing import Any

from gputui.fit.graph.runtime import runtime_facts


def assumptions(
    runtime: str, runtime_source: str, *, loop: str | None = None, engine: str | None = None
) -> dict[str, Any]:
    """The entry's `assumptions`: the runtime's facts, then `loop` and `engine` where set."""
    out: dict[str, Any] = dict(runtime_facts(runtime, runtime_source))
    if loop is not None:
        out["loop"] = loop
    if engine is not None:
        out["engine"] = engine
    return out
