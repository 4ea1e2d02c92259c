"""GPU catalog: architectures and cards from the shipped TOML data, and a matcher for NVML names.

Never imports Textual: the fit checker and the CLI use it without a terminal UI.
"""

from __future__ import annotations

from gputui.catalog.catalog import Catalog
from gputui.catalog.loader import load_catalog
from gputui.catalog.models import Architecture, Card, MatchResult

__all__ = ["Architecture", "Card", "Catalog", "MatchResult", "load_catalog"]
