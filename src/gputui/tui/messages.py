"""What the polling thread posts to the UI thread."""

from __future__ import annotations

from textual.message import Message

from gputui.model.snapshot import Snapshot


class SnapshotReady(Message):
    def __init__(self, snapshot: Snapshot, elapsed_s: float) -> None:
        super().__init__()
        self.snapshot = snapshot
        self.elapsed_s = elapsed_s


class PollFailed(Message):
    def __init__(self, error: str, elapsed_s: float) -> None:
        super().__init__()
        self.error = error
        self.elapsed_s = elapsed_s


class CardsMatched(Message):
    def __init__(self, labels: dict[int, str]) -> None:
        super().__init__()
        self.labels = labels


class DashboardReady(Message):
    """The dashboard's widgets exist: the app may fill them and start polling."""
