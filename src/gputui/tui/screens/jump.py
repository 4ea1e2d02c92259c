"""The replay's "jump to a time" dialog: one line typed, its time returned (or nothing)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label

from gputui.tui.views.replay_time import parse_jump


class JumpScreen(ModalScreen[float | None]):
    """Asks for `HH:MM[:SS]`, `YYYY-MM-DD HH:MM[:SS]` or `+90s`/`-5m`; escape cancels."""

    DEFAULT_CSS = """
    JumpScreen { align: center middle; }
    JumpScreen > Vertical { width: 60; height: auto; border: round $accent; padding: 0 1; }
    """
    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, now: float) -> None:
        super().__init__()
        self.now = now

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label("Jump to: HH:MM[:SS], YYYY-MM-DD HH:MM[:SS], or +90s / -5m / +1h")
            yield Input(placeholder="12:30", id="jump-to")
            yield Label("", id="jump-error")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        when = parse_jump(event.value, self.now)
        if when is None:
            self.query_one("#jump-error", Label).update(f"not a time: {event.value!r}")
            return
        self.dismiss(when)

    def action_cancel(self) -> None:
        self.dismiss(None)
