"""`ReplaySource`: each poll is the recording's poll at the replay clock's time.

The snapshots keep their recorded timestamps; their `source` is "replay" (the views then
offer no action on a process: what is replayed is not running here). The replay time starts at `start` (the
first poll recorded, by default) and runs at `speed` times the clock (`time.monotonic`,
or a test's), so `gputui --source replay --recording FILE` shows a recording as it
happened; `seek`, `pause` and `speed` are what `gputui replay`'s time bar drives. Before
the first poll it shows the first, after the last it stays on the last.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from pathlib import Path

from gputui.model.record import replace
from gputui.model.snapshot import Snapshot
from gputui.recording.reader import Recording, open_recording
from gputui.sources.base import Source
from gputui.sources.errors import SourceUnavailable


class ReplaySource(Source):
    """A Source reading a recording at a time that runs with a clock."""

    name = "replay"

    @classmethod
    def from_options(cls, options: Mapping[str, object]) -> ReplaySource:
        """`--source replay --recording FILE` (sources/registry.py)."""
        path = options.get("recording")
        if path is None:
            raise SourceUnavailable("--source replay needs --recording FILE")
        return cls(open_recording(Path(str(path))))

    def __init__(
        self,
        recording: Recording,
        *,
        clock: Callable[[], float] = time.monotonic,
        start: float | None = None,
        speed: float = 1.0,
    ) -> None:
        span = recording.span()
        if span is None:
            recording.close()
            raise SourceUnavailable(f"{recording.path}: no poll recorded yet")
        self.recording = recording
        self.span = span
        self._clock = clock
        self._speed = speed
        self.paused = False
        self._at = span[0] if start is None else start  # replay time at `_then`
        self._then = clock()

    @property
    def speed(self) -> float:
        return self._speed

    def now(self) -> float:
        """The replay time: where the next poll reads the recording."""
        if self.paused:
            return self._at
        return self._at + (self._clock() - self._then) * self._speed

    def _rebase(self, at: float) -> None:
        self._at = min(max(at, self.span[0]), self.span[1])
        self._then = self._clock()

    def seek(self, at: float) -> None:
        """Go to time `at` (kept within the recording)."""
        self._rebase(at)

    def set_speed(self, speed: float) -> None:
        self._rebase(self.now())
        self._speed = speed

    def set_paused(self, paused: bool) -> None:
        self._rebase(self.now())
        self.paused = paused

    def poll(self) -> Snapshot:
        at = self.now()
        if at >= self.span[1] and not self.paused:
            self.span = self.recording.span() or self.span  # a recording still being written
        snapshot = self.recording.snapshot_at(max(at, self.span[0]))
        if snapshot is None:  # the first poll was expired by retention meanwhile
            first = next(self.recording.snapshots(), None)
            if first is None:
                raise SourceUnavailable(f"{self.recording.path}: no poll recorded")
            snapshot = first
        # Named as the source it came from now: a replayed process is not there to signal.
        return replace(snapshot, source=self.name)

    def close(self) -> None:
        self.recording.close()
