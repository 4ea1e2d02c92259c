"""Alerts in the dashboard, driven as a user would: a notification when an alert fires, the
count in the header, the alerts screen (`a`) with its history and `m` to mute a rule, and
the GPU's XID and ECC events in its details (enter on the GPU panel)."""

from __future__ import annotations

from gputui.model.record import replace
from gputui.model.snapshot import GpuEvent
from gputui.tui.screens.alerts import AlertsScreen
from gputui.tui.screens.device import DeviceScreen
from tests.tui.conftest import ScriptedSource, make_app, make_snapshot
from tests.tui.scripted_app import screen_lines
from tests.waiting import wait_for

T = 1_700_000_000.0


def _bad_day() -> ScriptedSource:
    snap = make_snapshot()
    events = (GpuEvent(T, 0, "xid", 13), GpuEvent(T, 1, "ecc_dbe"), GpuEvent(T, 1, "xid", 48))
    return ScriptedSource(replace(snap, events=events))


async def test_an_alert_notifies_and_counts_in_the_header() -> None:
    source = _bad_day()
    app = make_app(source)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.alert_log.firing_count == 3)
        await pilot.pause()
        messages = [n.message for n in app._notifications]
        assert any("XID 13" in m and "restart the application" in m for m in messages)
        assert any("uncorrected ECC" in m for m in messages)
        assert "ALERTS 3" in screen_lines(app)[0]
        # the same poll again (a frozen source) neither notifies nor counts twice
        polls = source.polls
        await wait_for(pilot, lambda: source.polls > polls + 2)
        assert len(app._notifications) == len(messages)


async def test_the_alerts_screen_lists_the_history_and_mutes_a_rule() -> None:
    app = make_app(_bad_day())
    async with app.run_test(size=(140, 40)) as pilot:
        await wait_for(pilot, lambda: app.alert_log.firing_count == 3)
        await pilot.press("a")
        await wait_for(pilot, lambda: isinstance(app.screen, AlertsScreen))
        await pilot.pause()
        text = "\n".join(screen_lines(app))
        assert "Alerts: 3 firing" in text
        assert "XID 13" in text and "XID 48" in text and "ecc_uncorrected" in text
        screen = app.screen
        assert isinstance(screen, AlertsScreen)
        rule = screen._shown[0].rule
        await pilot.press("m")
        await pilot.pause()
        assert any(r.name == rule and r.muted for r in app.alert_log.engine.rules)
        assert f"muted: {rule}" in "\n".join(screen_lines(app))
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is app.dashboard)


async def test_a_gpu_s_details_list_its_xid_and_ecc_events() -> None:
    app = make_app(_bad_day())
    async with app.run_test(size=(130, 45)) as pilot:
        await wait_for(pilot, lambda: app.alert_log.firing_count == 3)
        await pilot.press("tab", "tab", "enter")  # GPU 1's panel
        await wait_for(pilot, lambda: isinstance(app.screen, DeviceScreen))
        await pilot.pause()
        text = "\n".join(screen_lines(app))
        assert "XID and ECC events: since gputui started: 1 XID (48)" in text
        assert "uncorrected ECC error (double-bit)" in text
        assert "XID 48: double-bit (uncorrectable) ECC error" in text


async def test_a_gpu_without_events_keeps_its_details_as_they_were() -> None:
    app = make_app(ScriptedSource(make_snapshot(processes=())))
    async with app.run_test(size=(130, 45)) as pilot:
        await wait_for(pilot, lambda: app.latest_snapshot is not None)
        await pilot.pause()
        assert "ALERTS" not in screen_lines(app)[0]
        await pilot.press("tab", "enter")
        await wait_for(pilot, lambda: isinstance(app.screen, DeviceScreen))
        await pilot.pause()
        assert "XID" not in "\n".join(screen_lines(app))


async def test_w_watches_the_selected_process_and_its_end_is_an_alert() -> None:
    from tests.tui.scripted_app import ready_table

    source = ScriptedSource(make_snapshot())
    app = make_app(source)
    async with app.run_test(size=(120, 40)) as pilot:
        table = await ready_table(pilot, app)
        pid = table.selected.pid if table.selected is not None else None
        assert pid is not None
        await pilot.press("w")
        await pilot.pause()
        assert any(f"watching process {pid}" in n.message for n in app._notifications)
        gone = tuple(p for p in source.next_snapshot.processes if p.pid != pid)
        source.next_snapshot = replace(source.next_snapshot, timestamp=T + 5, processes=gone)
        await wait_for(pilot, lambda: any(c.rule == "process_ended" for c in app.alert_log.changes))
        change = next(c for c in app.alert_log.changes if c.rule == "process_ended")
        assert change.pid == pid and "peak GPU memory" in change.message


async def test_a_gpu_panel_counts_its_xids_beside_the_ecc_counter() -> None:
    from gputui.tui.widgets.gpu_panel import GpuPanel

    source = _bad_day()
    app = make_app(source)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.alert_log.firing_count == 3)
        more = (GpuEvent(T + 1, 0, "xid", 43), GpuEvent(T + 1, 0, "xid", 13))
        source.next_snapshot = replace(source.next_snapshot, timestamp=T + 1, events=more)
        panels = {p.index: p for p in app.dashboard.query(GpuPanel)}
        await wait_for(pilot, lambda: "XIDs: 3 (13, 43)" in panels[0].stats_text())
        assert "XIDs: 1 (48)" in panels[1].stats_text()
        await pilot.pause()
        assert any("XIDs: 3 (13, 43)" in line for line in screen_lines(app))
