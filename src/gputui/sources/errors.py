"""The one exception every source raises when it cannot start.

Apart from base.py (which opens a source of each kind) so that the sources can
raise it without importing the module that imports them.
"""

from __future__ import annotations


class SourceUnavailable(Exception):
    """The source cannot start; `reason` is one human sentence for the UI and CLI."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
