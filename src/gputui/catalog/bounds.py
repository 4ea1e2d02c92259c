"""`Bounds`, the range marker a catalog field carries in its annotation.

Its own module so that the plain classes (models.py) and the pydantic validator
built from them (validate.py) both read it without importing each other.
"""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True, slots=True)
class Bounds:
    """Range of a figure, for the validator: `gt`/`ge` below, `le` above (None: no bound).

    Our own marker rather than annotated_types' Interval, which pydantic reads the
    same way: that package would be one more import (0.2 MiB) in every process that
    only reads a validated catalog.
    """

    gt: float | None = None
    ge: float | None = None
    le: float | None = None
