"""`gputui replay`: the dashboard on a recording, driven from its time bar as a user would."""

from __future__ import annotations

from pathlib import Path

from textual.pilot import Pilot

from gputui.model.alert import AlertChange
from gputui.recording.reader import open_recording
from gputui.recording.store import Recorder
from gputui.sources.replay.source import ReplaySource
from gputui.tui.replay_app import ReplayApp
from gputui.tui.views.replay_time import bar_cells, parse_jump
from gputui.tui.widgets.time_bar import TimeBar
from tests.recording.conftest import simulated

POLLS = 120
ALERTS_AT = (30, 80)


def make_recording(path: Path) -> list[float]:
    source, clock = simulated("demo")
    times = []
    with Recorder(path) as recorder:
        for i in range(POLLS):
            clock[0] = float(i)
            snapshot = source.poll()
            alerts = [
                AlertChange(timestamp=snapshot.timestamp, rule="memory_high", state="firing",
                            severity="warning", message=f"GPU 0 at poll {i}", gpu="0")
            ] if i in ALERTS_AT else []  # fmt: skip
            recorder.write(snapshot, alerts=alerts)
            times.append(snapshot.timestamp)
    return times


def make_replay(path: Path) -> tuple[ReplayApp, list[float]]:
    times = make_recording(path)
    recording = open_recording(path)
    clock = [0.0]
    source = ReplaySource(recording, clock=lambda: clock[0])
    app = ReplayApp(
        source, alerts=recording.alerts(), times=recording.times(),
        interval=0.05, clock=lambda: "01:02:03", hostname="testhost", card_lookup=None,
    )  # fmt: skip
    app.test_clock = clock  # type: ignore[attr-defined]
    return app, times


async def shown_at(pilot: Pilot[int], app: ReplayApp, t: float) -> None:
    for _ in range(500):
        snap = app.latest_snapshot
        if snap is not None and snap.timestamp == t:
            return
        await pilot.pause(0.02)
    shown = app.latest_snapshot.timestamp if app.latest_snapshot else None
    raise AssertionError(f"the dashboard shows {shown}, not {t}")


def bar_text(app: ReplayApp) -> str:
    return str(app.time_bar.render())


async def test_the_dashboard_plays_the_recording_under_a_time_bar(tmp_path: Path) -> None:
    app, times = make_replay(tmp_path / "run.sqlite")
    async with app.run_test(size=(120, 40)) as pilot:
        await shown_at(pilot, app, times[0])
        assert app.screen.query_one(TimeBar) is app.time_bar
        assert "playing" in bar_text(app) and "x1" in bar_text(app) and "alerts 2" in bar_text(app)
        assert app.latest_snapshot is not None and app.latest_snapshot.source == "replay"
        app.test_clock[0] = 5.0  # type: ignore[attr-defined]
        await shown_at(pilot, app, times[5])


async def test_pause_and_step_forward_and_back(tmp_path: Path) -> None:
    app, times = make_replay(tmp_path / "run.sqlite")
    async with app.run_test(size=(120, 40)) as pilot:
        await shown_at(pilot, app, times[0])
        await pilot.press("space")
        assert app.replay.paused and "paused" in bar_text(app)
        app.test_clock[0] = 30.0  # type: ignore[attr-defined]
        await pilot.pause(0.2)
        assert app.latest_snapshot is not None and app.latest_snapshot.timestamp == times[0]
        await pilot.press("full_stop")
        await shown_at(pilot, app, times[1])
        await pilot.press("full_stop")
        await shown_at(pilot, app, times[2])
        await pilot.press("comma")
        await shown_at(pilot, app, times[1])


async def test_speeds_x1_x10_x60(tmp_path: Path) -> None:
    app, times = make_replay(tmp_path / "run.sqlite")
    async with app.run_test(size=(120, 40)) as pilot:
        await shown_at(pilot, app, times[0])
        await pilot.press("x")
        assert app.replay.speed == 10 and "x10" in bar_text(app)
        app.test_clock[0] = 2.0  # type: ignore[attr-defined]
        await shown_at(pilot, app, times[20])
        await pilot.press("x")
        assert app.replay.speed == 60
        app.test_clock[0] = 3.0  # type: ignore[attr-defined]
        await shown_at(pilot, app, times[80])
        await pilot.press("x")
        assert app.replay.speed == 1


async def test_jump_to_the_next_and_previous_alert(tmp_path: Path) -> None:
    app, times = make_replay(tmp_path / "run.sqlite")
    async with app.run_test(size=(160, 40)) as pilot:
        await shown_at(pilot, app, times[0])
        await pilot.press("n")
        await shown_at(pilot, app, times[30])
        assert app.replay.paused
        assert "memory_high firing: GPU 0 at poll 30" in bar_text(app)
        await pilot.press("n")
        await shown_at(pilot, app, times[80])
        await pilot.press("b")
        await shown_at(pilot, app, times[30])


async def test_jump_to_a_typed_time(tmp_path: Path) -> None:
    app, times = make_replay(tmp_path / "run.sqlite")
    async with app.run_test(size=(120, 40)) as pilot:
        await shown_at(pilot, app, times[0])
        await pilot.press("space", "g", *"+50s", "enter")
        await shown_at(pilot, app, times[50])


def test_the_bar_marks_alerts_and_the_present() -> None:
    assert bar_cells(11, (0.0, 10.0), 5.0, [2.0, 9.0]) == "━━▲━━●───▲─"
    assert bar_cells(11, (0.0, 10.0), 0.0, []) == "●──────────"


def test_typed_times() -> None:
    now = 1_000_000.0
    assert parse_jump("+90s", now) == now + 90
    assert parse_jump("-5m", now) == now - 300
    assert parse_jump("+1h", now) == now + 3600
    assert parse_jump("soon", now) is None
    at = parse_jump("2026-01-01 00:10:00", now)
    assert at is not None and parse_jump("00:10:00", at) == at
