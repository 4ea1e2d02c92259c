"""Typed, bounded reads of a Hugging Face config dict, each error naming the key.

Every integer is checked against the bound of the quantity its key holds
(fit.transformer.bounds.KEY_QUANTITY) as it is read, so the message names the key the
user wrote (with a prefix such as "text_config."), not an internal field.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from gputui.fit.transformer.bounds import ConfigError, check_int, quantity_of, show

__all__ = ["Keys", "show"]


class Keys:
    """Typed reads of a config dict; `prefix` is prepended to the key in error messages."""

    def __init__(self, raw: Mapping[str, Any], prefix: str = "") -> None:
        self.raw = raw
        self.prefix = prefix

    def _field(self, key: str) -> str:
        return f"{self.prefix}{key}"

    def has(self, key: str) -> bool:
        return self.raw.get(key) is not None

    def integer(self, key: str, default: int | None = None, minimum: int = 1) -> int:
        """The key's integer (or `default` when absent or null), within minimum..its bound."""
        value = self.raw.get(key, default)
        if value is None:
            value = default
        if value is None:
            raise ConfigError(self._field(key), "is required")
        return check_int(self._field(key), value, quantity_of(key), minimum)

    def opt_int(self, key: str, minimum: int = 1) -> int | None:
        return self.integer(key, minimum=minimum) if self.has(key) else None

    def flag(self, key: str, default: bool) -> bool:
        value = self.raw.get(key, default)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise ConfigError(self._field(key), f"must be true or false, got {show(value)}")
        return value

    def number(self, key: str, default: float) -> float:
        value = self.raw.get(key, default)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(self._field(key), f"must be a number, got {show(value)}")
        if isinstance(value, int) and abs(value) > 1 << 53 or not math.isfinite(value):
            raise ConfigError(self._field(key), f"must be a finite number, got {show(value)}")
        return float(value)

    def text(self, key: str, default: str | None = None) -> str | None:
        value = self.raw.get(key, default)
        if value is None:
            return default
        if not isinstance(value, str):
            raise ConfigError(self._field(key), f"must be a string, got {show(value)}")
        return value

    def index_list(self, key: str, layers: int) -> frozenset[int]:
        """A list of layer indices (mlp_only_layers), each in 0..layers-1."""
        raw = self.raw.get(key)
        if raw is None:
            return frozenset()
        if not isinstance(raw, list) or len(raw) > layers:
            raise ConfigError(self._field(key), f"must be a list of at most {layers} layer indices")
        for i in raw:
            if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < layers:
                raise ConfigError(
                    self._field(key), f"layer index {show(i)} is not in 0..{layers - 1}"
                )
        return frozenset(raw)
