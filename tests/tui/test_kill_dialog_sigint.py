"""What nvitop users miss: SIGINT in the kill dialog (a training script's
KeyboardInterrupt: checkpoint and stop), by key and by button."""

from __future__ import annotations

import signal

from demo_driving import app_for, ready

from gputui.tui.app import GpuTuiApp
from gputui.tui.screens.kill import KillScreen
from gputui.tui.views.kill import Identity, KillPolicy
from gputui.tui.widgets.process_table import ProcessTable
from tests.waiting import wait_for


def _app(sent: list[tuple[int, int]]) -> GpuTuiApp:
    """Demo PIDs, allowed here; signals recorded instead of sent."""
    policy = KillPolicy(
        is_root=lambda: True,
        allow_simulated=True,
        send_signal=lambda pid, sig: sent.append((pid, sig)),
        identify=lambda pid: Identity(pid, 0.0, 0),
    )
    return app_for(None, kill_policy=policy)


async def test_i_sends_sigint_to_the_selected_process() -> None:
    sent: list[tuple[int, int]] = []
    app = _app(sent)
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(pilot, fit=False)
        proc = app.dashboard.query_one(ProcessTable).selected
        assert proc is not None
        await pilot.press("k")
        await wait_for(pilot, lambda: isinstance(app.screen, KillScreen))
        await pilot.pause(0.1)
        await pilot.press("i")
        await wait_for(pilot, lambda: bool(sent))
        assert sent == [(proc.pid, int(signal.SIGINT))]


async def test_sigint_button_is_there() -> None:
    sent: list[tuple[int, int]] = []
    app = _app(sent)
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(pilot, fit=False)
        await pilot.press("k")
        await wait_for(pilot, lambda: isinstance(app.screen, KillScreen))
        await pilot.pause(0.1)
        await pilot.click("#int")
        await wait_for(pilot, lambda: bool(sent))
        assert sent[0][1] == int(signal.SIGINT)
