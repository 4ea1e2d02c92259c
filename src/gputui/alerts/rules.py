"""The alert rules gputui knows, their defaults, and their settings from the config file.

Rules are tables under `[alerts]` in the settings file (`settings.toml`, read by the
dashboard) or in a file given to `gputui watch --alerts FILE`:

    [alerts]
    # threshold_pct: the rule's own key (RULES below); for_s: how long the condition
    # must hold before it fires; clear_s: how long it must be gone before it clears
    memory_high = { threshold_pct = 90, for_s = 60, clear_s = 30 }
    xid = { muted = true }  # evaluated never, shown never

A rule not named keeps its defaults. A bad rule (an unknown rule or key, a value of the
wrong type or out of range) is one line naming the file and the key, exit 2: an alert
that silently did not arm is worse than no start.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from gputui.core.errors import UserError
from gputui.core.textsafe import visible
from gputui.model.alert import SEVERITIES, Severity
from gputui.model.record import record, replace

DAY_S = 86_400.0
MAX_WATCHED = 256  # pids or command patterns one rule may name
PATTERN_MAX = 200


@record
class Rule:
    """One rule's settings: the name is the rule's kind (one of RULES)."""

    name: str
    for_s: float
    clear_s: float
    severity: Severity
    muted: bool = False
    limit: float | None = None  # the rule's threshold (RULES says which key and unit)
    slowdown_c: float | None = None  # temperature_near_slowdown: the threshold, if known
    pids: tuple[int, ...] = ()  # process_ended: the watched processes
    commands: tuple[str, ...] = ()  # process_ended: watched when the command contains one


@record
class RuleSpec:
    """A rule's defaults and the name of its threshold key in the config file."""

    default: Rule
    limit_key: str | None
    limit_range: tuple[float, float] = (0.0, 0.0)


def _spec(
    name: str, for_s: float, clear_s: float, severity: Severity, limit: float | None = None,
    limit_key: str | None = None, limit_range: tuple[float, float] = (0.0, 0.0),
) -> RuleSpec:  # fmt: skip
    return RuleSpec(Rule(name, for_s, clear_s, severity, limit=limit), limit_key, limit_range)


# Each rule: hold (for_s) and clear (clear_s) seconds, severity, and its threshold with
# the config key and range that set it (docs/alerts.md has the table).
RULES: dict[str, RuleSpec] = {
    s.default.name: s
    for s in (
        _spec("memory_high", 30, 30, "warning", 95.0, "threshold_pct", (1, 100)),
        _spec("temperature_near_slowdown", 0, 30, "warning", 5.0, "margin_c", (0, 50)),
        _spec("throttling", 60, 30, "warning"),
        _spec("ecc_uncorrected", 0, 300, "critical"),
        _spec("xid", 0, 300, "warning"),
        _spec("gpu_lost", 0, 0, "critical"),
        _spec("memory_idle", 600, 30, "info", 1.0, "min_used_gib", (0, 1 << 20)),
        _spec("process_ended", 0, 60, "info"),
    )
}  # fmt: skip
COMMON_KEYS = ("muted", "for_s", "clear_s", "severity")


def default_rules() -> tuple[Rule, ...]:
    return tuple(spec.default for spec in RULES.values())


class RuleError(UserError):
    """A rule the config file got wrong: one line, naming the file and the key."""


def _seconds(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError("must be a number of seconds")
    if not 0 <= value <= DAY_S:
        raise ValueError(f"{value:g} is out of range (0 to {DAY_S:g})")
    return float(value)


def _bool(value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError("must be true or false")
    return value


def _severity(value: Any) -> Severity:
    if value not in SEVERITIES:
        raise ValueError(f"must be one of {', '.join(SEVERITIES)}")
    severity: Severity = value
    return severity


def _number(low: float, high: float) -> Callable[[Any], float]:
    def check(value: Any) -> float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError("must be a number")
        if not math.isfinite(value) or not low <= value <= high:
            raise ValueError(f"{value:g} is out of range ({low:g} to {high:g})")
        return float(value)

    return check


def _pids(value: Any) -> tuple[int, ...]:
    if not isinstance(value, list) or len(value) > MAX_WATCHED:
        raise ValueError(f"must be a list of at most {MAX_WATCHED} process ids")
    if not all(isinstance(p, int) and not isinstance(p, bool) and 0 < p < 1 << 22 for p in value):
        raise ValueError("must be a list of process ids (1 to 4194303)")
    return tuple(value)


def _commands(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or len(value) > MAX_WATCHED:
        raise ValueError(f"must be a list of at most {MAX_WATCHED} texts")
    if not all(isinstance(c, str) and 0 < len(c) <= PATTERN_MAX for c in value):
        raise ValueError(f"must be a list of texts of 1 to {PATTERN_MAX} characters")
    return tuple(visible(c) for c in value)


def _keys(spec: RuleSpec) -> dict[str, tuple[str, Callable[[Any], Any]]]:
    """Config key -> (Rule field, check) for one rule."""
    keys: dict[str, tuple[str, Callable[[Any], Any]]] = {
        "muted": ("muted", _bool),
        "for_s": ("for_s", _seconds),
        "clear_s": ("clear_s", _seconds),
        "severity": ("severity", _severity),
    }
    if spec.limit_key is not None:
        keys[spec.limit_key] = ("limit", _number(*spec.limit_range))
    name = spec.default.name
    if name == "temperature_near_slowdown":
        keys["slowdown_c"] = ("slowdown_c", _number(1, 200))
    if name == "process_ended":
        keys["pids"] = ("pids", _pids)
        keys["commands"] = ("commands", _commands)
    return keys


def rules_from_table(table: object, where: str) -> tuple[Rule, ...]:
    """Every rule, with the `[alerts]` table's settings applied; RuleError names a bad key."""
    shown = visible(where)
    if table is None:
        return default_rules()
    if not isinstance(table, Mapping):
        raise RuleError(f"{shown}: alerts: must be a table of rules ([alerts.memory_high], ...)")
    given: dict[str, Rule] = {}
    for name, settings in table.items():
        spec = RULES.get(name)
        if spec is None:
            known = ", ".join(RULES)
            raise RuleError(f"{shown}: alerts.{visible(str(name))}: unknown rule (rules: {known})")
        if not isinstance(settings, Mapping):
            raise RuleError(f"{shown}: alerts.{name}: must be a table of settings")
        keys = _keys(spec)
        changes: dict[str, Any] = {}
        for key, value in settings.items():
            entry = keys.get(key)
            if entry is None:
                raise RuleError(
                    f"{shown}: alerts.{name}.{visible(str(key))}: unknown setting "
                    f"(settings: {', '.join(keys)})"
                )
            try:
                changes[entry[0]] = entry[1](value)
            except ValueError as exc:
                raise RuleError(f"{shown}: alerts.{name}.{key}: {exc}") from None
        given[name] = replace(spec.default, **changes)
    return tuple(given.get(name, spec.default) for name, spec in RULES.items())


def load_rules(path: Path, *, required: bool) -> tuple[Rule, ...]:
    """The rules of the config file at `path` (its `[alerts]` table); the defaults when the
    file is not there and not `required` (the settings file nobody wrote yet)."""
    from gputui.core.tomlsafe import read_toml

    if not required and not path.exists():
        return default_rules()
    _, data = read_toml(path, what="config file", max_bytes=1 << 20, max_depth=8)
    return rules_from_table(data.get("alerts"), str(path))
