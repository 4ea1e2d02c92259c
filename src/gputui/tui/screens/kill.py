"""Confirm before signalling processes: it names each PID, user and command.

One process (the selected row) or several (the tagged rows); tagged processes
that may not be signalled are listed with the reason, and are not sent anything.
"""

from __future__ import annotations

import signal
from collections.abc import Sequence
from pathlib import Path

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Label, Static

from gputui.model.snapshot import GpuProcess
from gputui.tui.views import formatting as fmt

LIST_MAX = 12


class KillScreen(ModalScreen[int | None]):
    """Dismisses with the signal number to send, or None to cancel."""

    CSS_PATH = Path(__file__).with_name("kill.tcss")
    BINDINGS = [
        Binding("escape,n", "dismiss_none", "Cancel"),
        Binding("i", "interrupt", "SIGINT"),
        Binding("t", "term", "SIGTERM"),
        Binding("K", "kill", "SIGKILL"),
    ]

    def __init__(
        self, proc: GpuProcess | Sequence[GpuProcess], refused: Sequence[str] = ()
    ) -> None:
        super().__init__()
        self.procs = [proc] if isinstance(proc, GpuProcess) else list(proc)
        if not self.procs:
            raise ValueError("nothing to signal")
        self.proc = self.procs[0]
        self.refused = list(refused)

    def _details(self) -> Text:
        details = Text()
        if len(self.procs) == 1 and not self.refused:
            p = self.proc
            details.append(f"user     {p.user or fmt.NA}\n")
            details.append(f"GPU      {p.gpu_index} ({p.type}, {fmt.size(p.gpu_memory)})\n")
            details.append(f"command  {p.command or fmt.NA}")
            return details
        # One line per process (commands cut with an ellipsis), at most LIST_MAX of them.
        details = Text(no_wrap=True, overflow="ellipsis")
        for p in self.procs[:LIST_MAX]:
            details.append(f"PID {p.pid:<8} {p.user or fmt.NA:<10} GPU {p.gpu_index}  ")
            details.append(f"{p.command or fmt.NA}\n")
        if len(self.procs) > LIST_MAX:
            details.append(f"and {len(self.procs) - LIST_MAX} more\n")
        for line in self.refused[:LIST_MAX]:
            details.append(f"not sent: {line}\n", style="bold")
        if len(self.refused) > LIST_MAX:
            details.append(f"and {len(self.refused) - LIST_MAX} more not sent\n", style="bold")
        details.rstrip()
        return details

    def compose(self) -> ComposeResult:
        title = (
            f"Signal PID {self.proc.pid}?"
            if len(self.procs) == 1
            else f"Signal these {len(self.procs)} processes?"
        )
        with Vertical(id="kill-dialog"):
            yield Label(title, id="kill-title")
            single = len(self.procs) == 1 and not self.refused
            yield Static(self._details(), id="kill-details", classes="" if single else "list")
            with Horizontal(id="kill-buttons"):
                # SIGINT: a training script's KeyboardInterrupt, to checkpoint and stop.
                yield Button("SIGINT (i)", id="int", variant="primary")
                yield Button("SIGTERM (t)", id="term", variant="warning")
                yield Button("SIGKILL (K)", id="kill", variant="error")
                yield Button("Cancel (esc)", id="cancel", variant="default")

    def on_mount(self) -> None:
        # Focus lands on SIGTERM: Enter sends the gentle signal, never SIGKILL by accident.
        self.query_one("#term", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "int":
            self.dismiss(int(signal.SIGINT))
        elif event.button.id == "term":
            self.dismiss(int(signal.SIGTERM))
        elif event.button.id == "kill":
            self.dismiss(int(signal.SIGKILL))
        else:
            self.dismiss(None)

    def action_dismiss_none(self) -> None:
        self.dismiss(None)

    def action_interrupt(self) -> None:
        self.dismiss(int(signal.SIGINT))

    def action_term(self) -> None:
        self.dismiss(int(signal.SIGTERM))

    def action_kill(self) -> None:
        self.dismiss(int(signal.SIGKILL))
