"""The dashboard's alerts: the engine run once per poll, and what the views read of it.

Keeps the alert changes of this session (newest last, bounded) for the alerts screen,
the count of alerts firing for the header, and each GPU's XID and ECC events for its
details. The engine is gputui.alerts' own, the one `gputui watch` runs.
"""

from __future__ import annotations

from collections import deque

from gputui.alerts.engine import AlertEngine
from gputui.alerts.rules import Rule, default_rules
from gputui.model.alert import AlertChange
from gputui.model.snapshot import GpuEvent, Snapshot

MAX_CHANGES = 1000  # the alerts screen's history
MAX_EVENTS_PER_GPU = 100  # XID and ECC events kept per GPU for its details
SHOWN_EVENTS = frozenset({"xid", "ecc_sbe", "ecc_dbe"})  # not P-state or clock changes


class AlertLog:
    def __init__(self, rules: tuple[Rule, ...] | None = None) -> None:
        self.engine = AlertEngine(rules if rules is not None else default_rules())
        self.changes: deque[AlertChange] = deque(maxlen=MAX_CHANGES)
        self._events: dict[int, deque[GpuEvent]] = {}
        self.firing_count = 0
        self._last_timestamp: float | None = None
        self._xids: dict[int, dict[int, int]] = {}  # per GPU: XID code -> count, first seen first
        self._warnings: dict[int, str] = {}

    def update(self, snapshot: Snapshot) -> list[AlertChange]:
        """Run the rules on one poll; the changes it caused. A source frozen in time
        (screenshots, tests) repeats its snapshot: its events are kept once."""
        repeated = snapshot.timestamp == self._last_timestamp
        self._last_timestamp = snapshot.timestamp
        for event in () if repeated else snapshot.events:
            if event.kind in SHOWN_EVENTS:
                kept = self._events.setdefault(event.gpu_index, deque(maxlen=MAX_EVENTS_PER_GPU))
                kept.append(event)
            if event.kind == "xid":
                self._count_xid(event)
        changes = self.engine.update(snapshot)
        if changes:
            self.changes.extend(changes)
            self.firing_count = len(self.engine.firing())
        return changes

    def panel_warnings(self) -> dict[int, str]:
        """Per GPU with XIDs this session, the panel's warning: how many, which codes."""
        return self._warnings

    def _count_xid(self, event: GpuEvent) -> None:
        codes = self._xids.setdefault(event.gpu_index, {})
        codes[event.data] = codes.get(event.data, 0) + 1
        shown = ", ".join(str(c) for c in codes)
        self._warnings[event.gpu_index] = f"XIDs: {sum(codes.values())} ({shown})"

    def events_of(self, gpu_index: int) -> tuple[GpuEvent, ...]:
        """This GPU's XID and ECC events of this session, oldest first."""
        return tuple(self._events.get(gpu_index, ()))

    def toggle_mute(self, rule: str) -> bool:
        """Mute a rule, or unmute it; True when it is muted now."""
        muted = not next(r.muted for r in self.engine.rules if r.name == rule)
        self.engine.mute(rule, muted)
        self.firing_count = len(self.engine.firing())
        return muted
