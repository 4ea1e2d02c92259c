"""Settings (tui/settings.py) into a running dashboard at start, and back out at exit.

Given the app (its theme) and the dashboard screen, not the dashboard app itself:
app.py calls these, so they must not import it.
"""

from __future__ import annotations

from typing import Any

from textual.app import App

from gputui.tui.screens.dashboard import DashboardScreen
from gputui.tui.settings import Settings
from gputui.tui.widgets.process_table import COLUMN_KEYS, ProcessTable


def apply_settings(app: App[Any], dashboard: DashboardScreen, s: Settings) -> list[str]:
    """Put `s` into the dashboard (the interval is the app's own, at its start); warning
    lines for what cannot apply here (a theme this Textual does not have)."""
    warnings = []
    table = dashboard.query_one(ProcessTable)
    if s.hidden_columns:
        table.set_user_hidden(frozenset(s.hidden_columns))
    if s.sort is not None:
        table.set_sort(s.sort, s.reverse if s.reverse is not None else None)
    if s.filter:
        table.set_filter(s.filter)
        dashboard.show_filter_text(s.filter)
    if s.mine:
        dashboard.action_toggle_mine()
    if s.theme is not None:
        if s.theme in app.available_themes:
            app.theme = s.theme
        else:
            warnings.append(f"settings: theme: {s.theme!r} is not a theme here; kept the default")
    return warnings


def current_settings(
    app: App[Any], dashboard: DashboardScreen, interval: float, kept: Settings
) -> Settings:
    """What to write at exit: the dashboard's state now, the hidden columns (the palette's
    column chooser, or a hand edit) included."""
    table = dashboard.query_one(ProcessTable)
    return Settings(
        interval=interval,
        sort=table.sort_column,
        reverse=table.sort_reverse,
        filter=table.filter_text,
        mine=table.only_user is not None,
        theme=app.theme,
        hidden_columns=tuple(k for k in COLUMN_KEYS if k in table.user_hidden),
    )
