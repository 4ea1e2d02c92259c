"""The alert engine: snapshots in, alert changes out. Pure and clock-free.

`AlertEngine(rules).update(snapshot)` returns the `AlertChange`s that poll caused. Time
is the snapshots' own `timestamp`, so a replay, a test or a recorder gets the same
answer as the live dashboard.

Every rule is a condition per key (a GPU, a GPU and an XID code, a process) that is
true in some polls. Hysteresis is the same for all: a key fires once, when its
condition has held for the rule's `for_s`; it clears once, when the condition has been
gone for `clear_s`. An event (an XID, a double-bit ECC error, a watched process ending)
is a condition true in the poll that read it, so it fires at once and clears `clear_s`
after the last one. A muted rule is not evaluated, and muting a firing rule drops it
without a change (muting is not the problem going away).
"""

from __future__ import annotations

from gputui.alerts.conditions import CONDITIONS, Condition, Watched, watched_processes
from gputui.alerts.rules import Rule
from gputui.model.alert import AlertChange
from gputui.model.record import replace

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (see sources/base.py)
if TYPE_CHECKING:
    from collections.abc import Iterable

    from gputui.model.snapshot import Snapshot


class _State:
    """One key's progress: since when its condition holds, whether it fired, since when
    it has been gone."""

    __slots__ = ("since", "firing", "fired_at", "gone_since", "condition")

    def __init__(self, since: float, condition: Condition) -> None:
        self.since = since
        self.firing = False
        self.fired_at = since
        self.gone_since: float | None = None
        self.condition = condition


class AlertEngine:
    """Runs the rules over each snapshot in turn (see the module docstring)."""

    def __init__(self, rules: Iterable[Rule]) -> None:
        self._rules = {rule.name: rule for rule in rules}
        self._states: dict[str, dict[str, _State]] = {name: {} for name in self._rules}
        self._watched: dict[int, Watched] = {}
        self._slowdown_unknown: tuple[str, ...] = ()  # GPUs with no slowdown threshold

    @property
    def rules(self) -> tuple[Rule, ...]:
        return tuple(self._rules.values())

    def firing(self) -> tuple[AlertChange, ...]:
        """The alerts firing now, as the change that fired them."""
        return tuple(
            self._change(name, s.fired_at, "firing", s.condition)
            for name, states in self._states.items()
            for s in states.values()
            if s.firing
        )

    def notes(self) -> tuple[str, ...]:
        """Why a rule that is not muted cannot work on some GPU (as of the last snapshot)."""
        if not self._slowdown_unknown:
            return ()
        gpus = ", ".join(self._slowdown_unknown)
        return (
            f"alert temperature_near_slowdown is inactive on GPU {gpus}: the slowdown "
            "temperature is unknown; set alerts.temperature_near_slowdown.slowdown_c to arm it",
        )

    def mute(self, name: str, muted: bool = True) -> None:
        """Mute or unmute a rule from now on (the dashboard's alerts screen)."""
        rule = self._rules.get(name)
        if rule is None:
            raise KeyError(name)
        self._rules[name] = replace(rule, muted=muted)
        if muted:
            self._states[name] = {}

    def watch(self, pid: int) -> bool:
        """Watch a process from now on (`process_ended`); False if it was watched already."""
        rule = self._rules.get("process_ended")
        if rule is None:
            raise KeyError("process_ended")
        if pid in rule.pids:
            return False
        self._rules["process_ended"] = replace(rule, pids=(*rule.pids, pid))
        return True

    def update(self, snapshot: Snapshot) -> list[AlertChange]:
        """The changes this snapshot causes, firing ones first, each rule in RULES order."""
        now = snapshot.timestamp
        temperature = self._rules.get("temperature_near_slowdown")
        self._slowdown_unknown = (
            tuple(str(d.index) for d in snapshot.devices if d.info.temp_slowdown_c is None)
            if temperature is not None and not temperature.muted and temperature.slowdown_c is None
            else ()
        )
        ended = watched_processes(self._rules.get("process_ended"), snapshot, self._watched)
        changes: list[AlertChange] = []
        cleared: list[AlertChange] = []
        for name, rule in self._rules.items():
            if rule.muted:
                continue
            found = CONDITIONS[name](rule, snapshot, ended)
            states = self._states[name]
            for key, condition in found.items():
                state = states.get(key)
                if state is None:
                    state = states[key] = _State(now, condition)
                state.gone_since = None
                if not state.firing:
                    state.condition = condition
                    if now - state.since >= rule.for_s:
                        state.firing, state.fired_at = True, now
                        changes.append(self._change(name, now, "firing", condition))
            if len(states) == len(found):
                continue  # every key still holds: nothing to clear
            for key, state in list(states.items()):
                if key in found:
                    continue
                if not state.firing:
                    del states[key]
                    continue
                if state.gone_since is None:
                    state.gone_since = now
                if now - state.gone_since >= rule.clear_s:
                    del states[key]
                    cleared.append(self._change(name, now, "cleared", state.condition))
        return changes + cleared

    def _change(self, name: str, at: float, state: str, condition: Condition) -> AlertChange:
        rule = self._rules[name]
        message = condition.message if state == "firing" else f"cleared: {condition.message}"
        return AlertChange(
            timestamp=at,
            rule=name,
            state="firing" if state == "firing" else "cleared",
            severity=condition.severity or rule.severity,
            message=message,
            gpu=condition.gpu,
            pid=condition.pid,
            action=condition.action,
        )
