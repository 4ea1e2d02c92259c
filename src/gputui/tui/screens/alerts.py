"""`a`: the alerts of this session, newest first, and which rules are muted.

Reads the app's AlertLog (tui/alert_log.py), which runs the rules on every poll whether
or not this screen is open; the screen only draws, again after each poll while it is
on top. `m` mutes the rule of the selected alert (or unmutes it): until gputui quits,
that rule neither fires nor notifies (to keep it muted, set `muted = true` in the
settings file, docs/alerts.md).
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static

from gputui.model.alert import AlertChange
from gputui.model.snapshot import Snapshot
from gputui.tui.alert_log import AlertLog
from gputui.tui.views.gpu_events import clock_text

SEVERITY_STYLE = {"critical": "bold red", "warning": "bold yellow", "info": ""}
COLUMNS = ("Time", "State", "Severity", "Rule", "GPU", "Alert", "Action")


def where(change: AlertChange) -> str:
    if change.gpu is not None:
        return change.gpu
    return f"pid {change.pid}" if change.pid is not None else "host"


class AlertsScreen(Screen[None]):
    DEFAULT_CSS = """
    AlertsScreen { layout: vertical; }
    #alerts-title { height: auto; padding: 0 1; background: $boost; }
    #alerts-table { height: 1fr; }
    """
    BINDINGS = [
        Binding("escape,a", "back", "Back"),
        Binding("m", "toggle_mute", "Mute rule"),
    ]

    def __init__(self, log: AlertLog) -> None:
        super().__init__(id="alerts")
        self.alert_log = log
        self._shown: list[AlertChange] = []

    def compose(self) -> ComposeResult:
        yield Static(Text(""), id="alerts-title")
        table: DataTable[Text | str] = DataTable(id="alerts-table", cursor_type="row")
        table.add_columns(*COLUMNS)
        yield table
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self._draw()
        self.query_one(DataTable).focus()

    def update_snapshot(self, snapshot: Snapshot) -> None:
        """Called by the app after each poll while this screen is on top."""
        if self.is_mounted and list(reversed(self.alert_log.changes)) != self._shown:
            self._draw()

    def title_text(self) -> Text:
        text = Text(no_wrap=True, overflow="ellipsis")
        firing = self.alert_log.firing_count
        text.append(f"Alerts: {firing} firing", style="bold red" if firing else "bold")
        n = len(self.alert_log.changes)
        text.append(f"   {n} change{'' if n == 1 else 's'} this session", style="dim")
        muted = [r.name for r in self.alert_log.engine.rules if r.muted]
        if muted:
            text.append(f"   muted: {', '.join(muted)}", style="bold")
        for note in self.alert_log.engine.notes():
            text.append(f"\n{note}", style="dim")
        if not self.alert_log.changes:
            text.append("\nno alert has fired since gputui started", style="dim")
        return text

    def _draw(self) -> None:
        self.query_one("#alerts-title", Static).update(self.title_text())
        table: DataTable[Text | str] = self.query_one(DataTable)
        row = table.cursor_row
        table.clear()
        self._shown = list(reversed(self.alert_log.changes))
        for change in self._shown:
            style = SEVERITY_STYLE.get(change.severity, "")
            table.add_row(
                clock_text(change.timestamp),
                Text(change.state, style="bold" if change.state == "firing" else "dim"),
                Text(change.severity, style=style),
                change.rule,
                where(change),
                change.message,
                change.action or "",
            )
        if self._shown:
            table.move_cursor(row=min(row, len(self._shown) - 1))

    def action_back(self) -> None:
        self.app.pop_screen()

    def action_toggle_mute(self) -> None:
        table: DataTable[Text | str] = self.query_one(DataTable)
        if not self._shown or not 0 <= table.cursor_row < len(self._shown):
            self.notify("select an alert first: its rule is muted", severity="warning")
            return
        rule = self._shown[table.cursor_row].rule
        muted = self.alert_log.toggle_mute(rule)
        self.notify(f"alert rule {rule} {'muted' if muted else 'unmuted'} until gputui quits")
        self._draw()
