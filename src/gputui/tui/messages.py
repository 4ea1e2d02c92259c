"""What the dashboard's workers post to the UI thread, besides the poll's (poller.py)."""

from __future__ import annotations

from textual.message import Message


class CardsMatched(Message):
    """Card labels by GPU index; None when none were asked for (the catalog flag only)."""

    def __init__(self, labels: dict[int, str] | None) -> None:
        super().__init__()
        self.labels = labels


class DashboardReady(Message):
    """The dashboard's widgets exist: the app may fill them and start polling."""
