"""An alert change survives the JSON the recorder stores it as, and a damaged one is refused."""

from __future__ import annotations

import pytest

from gputui.model.alert import AlertChange, alert_from_json


def test_an_alert_change_round_trips_through_json() -> None:
    change = AlertChange(
        timestamp=1.5,
        rule="xid",
        state="firing",
        severity="critical",
        message="GPU 0: XID 79 (fallen off the bus)",
        gpu="0",
        pid=None,
        action="reboot the node",
    )
    assert alert_from_json(change.to_json()) == change


@pytest.mark.parametrize(
    ("key", "value", "named"),
    [
        ("timestamp", "soon", "alert.timestamp"),
        ("state", "burning", "alert.state"),
        ("severity", 3, "alert.severity"),
        ("pid", True, "alert.pid"),
        ("message", None, "alert.message"),
    ],
)
def test_a_damaged_alert_names_its_field(key: str, value: object, named: str) -> None:
    good = AlertChange(1.0, "memory_high", "cleared", "warning", "ok").to_json()
    with pytest.raises(ValueError, match=named):
        alert_from_json({**good, key: value})
