"""`?`: every key in one place, built from the app's own bindings so it cannot drift."""

from __future__ import annotations

from pathlib import Path

from rich.table import Table
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

EXTRA = [
    ("up/down, pgup/pgdn", "move in the process table"),
    ("click a column header", "sort by it (again: reverse)"),
    ("enter / escape in filter", "keep / clear the filter"),
    ("ctrl+p", "command palette (same actions)"),
]


class HelpScreen(ModalScreen[None]):
    CSS_PATH = Path(__file__).with_name("help.tcss")
    # q quits, here as everywhere (a modal screen does not pass keys on to the App).
    BINDINGS = [
        Binding("escape,question_mark", "dismiss_help", "Close"),
        Binding("q", "app.quit", "Quit"),
    ]

    def __init__(self, keys: list[tuple[str, str]]) -> None:
        super().__init__()
        self.keys = keys

    def compose(self) -> ComposeResult:
        table = Table(box=None, show_header=False, padding=(0, 2))
        table.add_column(style="bold")
        table.add_column()
        for key, what in [*self.keys, *EXTRA]:
            table.add_row(key, what)
        with VerticalScroll(id="help-dialog"):
            yield Static("gputui keys", id="help-title")
            yield Static(table)
            yield Static("escape or ? closes this", id="help-hint")

    def action_dismiss_help(self) -> None:
        self.dismiss(None)
