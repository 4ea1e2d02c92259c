"""ctrl+z hands the terminal back to the shell, as nvitop and nvtop do (`fg` resumes)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import uuid

import pytest
from demo_driving import app_for, ready

from gputui.tui.app import GpuTuiApp
from tests.waiting import poll_until, wait_for


async def test_ctrl_z_runs_textuals_suspend_action(monkeypatch: object) -> None:
    """Pilot's headless driver cannot stop the process: the action it reaches is recorded.

    Textual's own action (App.action_suspend_process) restores the terminal and sends
    SIGTSTP; the real stop is checked in a terminal by test_suspend_in_tmux below.
    """
    app = app_for(None)
    calls: list[str] = []
    app.action_suspend_process = lambda: calls.append("suspend")  # type: ignore[method-assign]
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(pilot, fit=False)
        await pilot.press("ctrl+z")
        await wait_for(pilot, lambda: calls == ["suspend"])
        assert isinstance(app, GpuTuiApp) and app.is_running


async def test_help_lists_ctrl_z() -> None:
    app = app_for(None)
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(pilot, fit=False)
        await pilot.press("question_mark")
        await pilot.pause(0.2)
        keys = [k for k, _ in app.screen.keys]  # type: ignore[attr-defined]
        assert "ctrl+z" in keys


def _tmux(sock: str, *args: str) -> str:
    return subprocess.run(
        ["tmux", "-L", sock, "-f", "/dev/null", *args],
        capture_output=True,
        text=True,
        check=False,
    ).stdout


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux")
def test_suspend_in_tmux() -> None:
    """In an interactive shell: ctrl+z stops the dashboard, `fg` brings it back drawing."""
    sock = f"gputui-suspend-{uuid.uuid4().hex[:8]}"
    _tmux(sock, "new-session", "-d", "-x", "120", "-y", "40", "bash --norc --noprofile -i")
    try:
        _tmux(sock, "send-keys", f"{sys.executable} -m gputui --demo --no-config", "Enter")

        def screen_has(text: str) -> bool | None:
            return True if text in _tmux(sock, "capture-pane", "-p") else None

        assert poll_until(lambda: screen_has("SIMULATED"), 60), _tmux(sock, "capture-pane", "-p")

        # A key typed while the app is still starting its input thread may be lost: again.
        def stopped() -> bool | None:
            _tmux(sock, "send-keys", "C-z")
            return poll_until(lambda: screen_has("Stopped"), 3)

        assert poll_until(stopped, 45), _tmux(sock, "capture-pane", "-p")
        _tmux(sock, "send-keys", "clear", "Enter")
        _tmux(sock, "send-keys", "fg", "Enter")
        assert poll_until(lambda: screen_has("SIMULATED"), 30), _tmux(sock, "capture-pane", "-p")

        # Keys work again once resumed (one typed while the driver restarts may be lost).
        def quit_taken() -> bool | None:
            _tmux(sock, "send-keys", "q")
            return poll_until(lambda: None if screen_has("SIMULATED") else True, 3)

        gone = poll_until(quit_taken, 30)
        assert gone, _tmux(sock, "capture-pane", "-p")
    finally:
        _tmux(sock, "kill-server")
