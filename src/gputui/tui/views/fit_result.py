"""What one Fit pass found (views/fit_pass.py), apart from the engine that finds it.

Its own module so that the dashboard's fit line can say "no models configured"
(and the widgets name the type) without importing the fit engine and the catalog:
with no models file of the user's, the dashboard never loads them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (see sources/base.py)
if TYPE_CHECKING:
    from typing import Any

    from gputui.catalog import Catalog
    from gputui.fit import AnyModel, ModelCheck, Ranked, Target, TransformerCheck
    from gputui.fit.targets import Unavailable


@dataclass(frozen=True)
class FitPass:
    """What one worker pass found; applied to the screen on the UI thread."""

    path: Path | None = None
    origin: str = ""
    mtime: float | None = None
    models: tuple[AnyModel, ...] = ()
    error: str | None = None
    warnings: tuple[str, ...] = ()
    catalog: Catalog | None = None
    targets: tuple[Target, ...] = ()
    unavailable: tuple[Unavailable, ...] = ()
    checks: tuple[ModelCheck | TransformerCheck, ...] = ()
    rankings: dict[str, list[Ranked[Any]]] = field(default_factory=dict)  # by model name, any kind
    stopped: str | None = None  # why the pass did not finish
    elapsed_s: float = 0.0
