"""A reproducible dashboard for screenshots, snapshot tests and the benchmark.

Frozen simulated time, a pre-filled history (so sparklines have a past), a
fixed header clock and host name: the same pixels on every machine.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from gputui.history.metrics import History
from gputui.sources.simulated.source import SimulatedSource
from gputui.tui.app import GpuTuiApp
from gputui.tui.settings import Settings
from gputui.tui.views.cards import CardLookup
from gputui.tui.views.kill import Identity, KillPolicy

DEMO_T = 600.0  # seconds into the scenario: jobs are running, history is full
HISTORY_S = 120
FIXED_CLOCK = "12:34:56"
FIXED_HOST = "gpu-box"


def frozen_source(scenario: Path | None, t: float = DEMO_T) -> SimulatedSource:
    return SimulatedSource.from_scenario(scenario, clock=lambda: t)


def prefilled_history(
    source: SimulatedSource, t: float = DEMO_T, seconds: int = HISTORY_S
) -> History:
    history = History(maxlen=300)
    for k in range(seconds, 0, -1):
        history.add(source.snapshot_at(t - k))
    return history


def demo_app(
    scenario: Path | None = None,
    *,
    t: float = DEMO_T,
    fallback_reason: str | None = None,
    card_lookup: CardLookup | None = None,
    readonly: bool = False,
    kill_policy: KillPolicy | None = None,
    interval: float = 1.0,
    models_path: Path | None = None,
    settings: Settings | None = None,
) -> GpuTuiApp:
    """Polls repeat the same frozen snapshot, which the app does not add to history twice."""
    source = frozen_source(scenario, t)
    app = GpuTuiApp(
        source,
        fallback_reason=fallback_reason,
        interval=interval,
        readonly=readonly,
        clock=lambda: FIXED_CLOCK,
        hostname=FIXED_HOST,
        history=prefilled_history(source, t),
        card_lookup=card_lookup,
        kill_policy=kill_policy,
        models_path=models_path,
        settings=settings,
    )
    if kill_policy is not None and kill_policy.allow_simulated:
        # Made-up PIDs have no live process to identify: take the listing's word for it.
        kill_policy.identify = _listed_identity(app)
    return app


def _listed_identity(app: GpuTuiApp) -> Callable[[int], Identity | None]:
    """The identity a simulated listing implies (start time from its running time, uid 0)."""

    def identify(pid: int) -> Identity | None:
        snap = app.latest_snapshot
        if snap is None:
            return None
        for p in snap.processes:
            if p.pid == pid:
                return Identity(pid, snap.timestamp - (p.running_s or 0.0), 0)
        return None

    return identify


# The replay picture: a recording of the scenario around DEMO_T, with two alerts.
REPLAY_ALERTS_AT = (DEMO_T + 40, DEMO_T + 200)


def replay_demo_app(
    folder: Path, scenario: Path | None = None, card_lookup: CardLookup | None = None
) -> GpuTuiApp:
    """`gputui replay` on a recording made here (in `folder`) of the frozen scenario, paused
    at DEMO_T with its history before it, on a replay clock that does not move."""
    from gputui.model.alert import AlertChange
    from gputui.recording.reader import open_recording
    from gputui.recording.store import Recorder
    from gputui.sources.replay.source import ReplaySource
    from gputui.tui.replay_app import ReplayApp

    at = [0.0]
    source = SimulatedSource.from_scenario(scenario, clock=lambda: at[0])
    path = folder / "demo-recording.sqlite"
    with Recorder(path) as recorder:
        for k in range(int(DEMO_T) - HISTORY_S, int(DEMO_T) + 300):
            at[0] = float(k)
            snapshot = source.poll()
            alerts = []
            if k in REPLAY_ALERTS_AT:
                alerts.append(
                    AlertChange(
                        timestamp=snapshot.timestamp, rule="memory_high", state="firing",
                        severity="warning", message="GPU 0 memory at or above 95 % for 30 s",
                        gpu="0",
                    )
                )  # fmt: skip
            recorder.write(snapshot, alerts=alerts)
    recording = open_recording(path)
    t0 = source.snapshot_at(0.0).timestamp
    history = History(maxlen=300)
    for snapshot in recording.snapshots(since=t0 + DEMO_T - HISTORY_S, until=t0 + DEMO_T - 1):
        history.add(snapshot)
    replay = ReplaySource(recording, clock=lambda: 0.0, start=t0 + DEMO_T)
    replay.set_paused(True)
    return ReplayApp(
        replay,
        alerts=recording.alerts(),
        times=recording.times(),
        clock=lambda: FIXED_CLOCK,
        hostname=FIXED_HOST,
        history=history,
        card_lookup=card_lookup,
    )
