"""A GPU's XID and ECC events as lines for its details: what happened, when, what to do."""

from __future__ import annotations

import time
from collections.abc import Sequence

from gputui.alerts.xid import describe_xid
from gputui.model.snapshot import GpuEvent

KIND_TEXT = {
    "ecc_sbe": "corrected ECC error (single-bit)",
    "ecc_dbe": "uncorrected ECC error (double-bit)",
}


def clock_text(timestamp: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(timestamp))


def event_line(event: GpuEvent) -> str:
    where = "" if event.gpu_instance_id is None else f" (GPU instance {event.gpu_instance_id})"
    if event.kind == "xid":
        meaning, _, action = describe_xid(event.data)
        what = f"XID {event.data}{where}: {meaning}"
        if action != meaning:  # an unknown XID says it once
            what += f" → {action}"
    else:
        what = KIND_TEXT.get(event.kind, event.kind) + where
    return f"{clock_text(event.timestamp)}  {what}"


def events_summary(events: Sequence[GpuEvent]) -> str:
    """One line: how many XIDs (which codes) and ECC events this session."""
    xids = [e.data for e in events if e.kind == "xid"]
    sbe = sum(1 for e in events if e.kind == "ecc_sbe")
    dbe = sum(1 for e in events if e.kind == "ecc_dbe")
    if not events:
        return "no XID or ECC events since gputui started"
    codes = ", ".join(str(c) for c in dict.fromkeys(xids))
    parts = [f"{len(xids)} XID{'s' if len(xids) != 1 else ''}" + (f" ({codes})" if codes else "")]
    parts.append(f"{dbe} uncorrected, {sbe} corrected ECC events")
    return "since gputui started: " + "; ".join(parts)
