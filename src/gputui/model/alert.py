"""An alert changing state: what the rules emit, the recorder stores and the views show.

Plain data shared by three readers that must agree on one shape: the alert rules
(which emit a change when a rule fires or clears), the recorder (which stores each
change beside the samples of its poll) and replay (which marks the time bar with
them and jumps between them).
"""

from __future__ import annotations

from typing import Any, Literal

from gputui.model.record import record

AlertState = Literal["firing", "cleared"]
Severity = Literal["info", "warning", "critical"]
ALERT_STATES: tuple[AlertState, ...] = ("firing", "cleared")
SEVERITIES: tuple[Severity, ...] = ("info", "warning", "critical")


@record
class AlertChange:
    """One rule firing or clearing at one moment, for one GPU (or the host) or process."""

    timestamp: float  # Unix time of the poll that changed the state
    rule: str  # the rule's name in the config file, e.g. "memory_high"
    state: AlertState
    severity: Severity
    message: str  # one line, already sanitised
    gpu: str | None = None  # "0", or a MIG instance "0:MIG-1" (model/mig.py); None: the host
    pid: int | None = None  # a process rule's process
    action: str | None = None  # what to do, e.g. NVIDIA's recommended action for an XID

    def to_json(self) -> dict[str, Any]:
        """The change as a JSON object (the recorder's column and `watch --alerts`' line)."""
        return {
            "timestamp": self.timestamp,
            "rule": self.rule,
            "state": self.state,
            "severity": self.severity,
            "message": self.message,
            "gpu": self.gpu,
            "pid": self.pid,
            "action": self.action,
        }


def alert_from_json(data: Any) -> AlertChange:
    """The inverse of `AlertChange.to_json`, for a file gputui wrote (a recording).

    A recording can be damaged or edited: every field is type-checked, and a bad one
    raises ValueError naming it.
    """
    if not isinstance(data, dict):
        raise ValueError("alert: not an object")

    def text(key: str, optional: bool = False) -> str | None:
        value = data.get(key)
        if value is None and optional:
            return None
        if not isinstance(value, str):
            raise ValueError(f"alert.{key}: not a string")
        return value

    timestamp = data.get("timestamp")
    if isinstance(timestamp, bool) or not isinstance(timestamp, (int, float)):
        raise ValueError("alert.timestamp: not a number")
    state, severity = data.get("state"), data.get("severity")
    if state not in ALERT_STATES:
        raise ValueError(f"alert.state: not one of {', '.join(ALERT_STATES)}")
    if severity not in SEVERITIES:
        raise ValueError(f"alert.severity: not one of {', '.join(SEVERITIES)}")
    pid = data.get("pid")
    if pid is not None and (isinstance(pid, bool) or not isinstance(pid, int)):
        raise ValueError("alert.pid: not an integer")
    return AlertChange(
        timestamp=float(timestamp),
        rule=text("rule") or "",
        state=state,
        severity=severity,
        message=text("message") or "",
        gpu=text("gpu", optional=True),
        pid=pid,
        action=text("action", optional=True),
    )
