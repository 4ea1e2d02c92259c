"""`Recorded`: a source whose every poll is also written to a recording (`gputui --record`).

A wrapper, never opened by name. What it polls is recorded whole, before a view's
filter (`--only`) narrows it. A recording that fails (a full disk, a read-only file
system) stops recording, not the dashboard: the failure becomes the snapshot's notice,
shown once, and the source goes on polling. `alerts`, when set, is asked for the alert
changes of each poll (the alert rules' engine, which this layer does not import), and
they are recorded with it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from gputui.model.alert import AlertChange
from gputui.model.record import replace
from gputui.model.snapshot import Snapshot
from gputui.recording.schema import RecordingError
from gputui.recording.store import Recorder
from gputui.sources.base import Source


class Recorded(Source):
    """`source`, with each poll written by `recorder` until it fails."""

    def __init__(
        self,
        source: Source,
        recorder: Recorder,
        alerts: Callable[[Snapshot], Sequence[AlertChange]] | None = None,
    ) -> None:
        self.source = source
        self.recorder: Recorder | None = recorder
        self.alerts = alerts
        self.name = source.name
        self.failure: str | None = None

    def poll(self) -> Snapshot:
        snapshot = self.source.poll()
        if self.recorder is not None:
            try:
                changes = self.alerts(snapshot) if self.alerts is not None else ()
                self.recorder.write(snapshot, changes)
            except RecordingError as exc:
                self.failure = f"recording stopped: {exc}"
                self.recorder.close()
                self.recorder = None
        if self.failure is not None:
            snapshot = replace(snapshot, notices=(*snapshot.notices, self.failure))
        return snapshot

    def close(self) -> None:
        if self.recorder is not None:
            self.recorder.close()
            self.recorder = None
        self.source.close()
