"""The command palette's entries (ctrl+p): every dashboard key, and sort by each column.

A user who does not remember a key searches for what it does ("tree", "tag",
"detail", "sort by GPU mem"); the palette is that search. The entries call the
same actions as the keys. They are given what they call (`DashboardKeys`, which
GpuTuiApp is), not the app class: app.py imports this module, not the other way.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Protocol

from textual.app import SystemCommand

from gputui.tui.screens.dashboard import DashboardScreen
from gputui.tui.settings import KEPT_COLUMNS
from gputui.tui.views.process_columns import COLUMNS
from gputui.tui.widgets.process_table import ProcessTable


class DashboardKeys(Protocol):
    """What the palette's entries call: the dashboard app's key actions."""

    dashboard: DashboardScreen
    readonly: bool

    def action_toggle_pause(self) -> None: ...
    def action_faster(self) -> None: ...
    def action_slower(self) -> None: ...
    def action_cycle_sort(self) -> None: ...
    def action_reverse_sort(self) -> None: ...
    def action_filter(self) -> None: ...
    def action_process_details(self) -> None: ...
    def action_kill(self) -> None: ...
    def action_catalog(self) -> None: ...
    def action_fit(self) -> None: ...
    def action_history(self) -> None: ...
    def action_alerts(self) -> None: ...
    def action_watch_process(self) -> None: ...
    def action_help(self) -> None: ...


def _table(app: DashboardKeys) -> ProcessTable:
    return app.dashboard.query_one(ProcessTable)


def _sort_by(app: DashboardKeys, key: str) -> Callable[[], None]:
    def run() -> None:
        _table(app).set_sort(key)

    return run


def dashboard_commands(app: DashboardKeys) -> Iterable[SystemCommand]:
    """What the dashboard's keys do, as (title, help, callback) palette entries."""
    yield SystemCommand(
        "Pause / resume polling (p)", "Stop or restart reading the GPUs", app.action_toggle_pause
    )
    yield SystemCommand("Poll faster (+)", "Shorter refresh interval", app.action_faster)
    yield SystemCommand("Poll slower (-)", "Longer refresh interval", app.action_slower)
    yield SystemCommand(
        "Cycle sort column (s)", "Sort the process table by the next column", app.action_cycle_sort
    )
    yield SystemCommand("Reverse sort (r)", "Flip the process table order", app.action_reverse_sort)
    for column in COLUMNS:
        yield SystemCommand(
            f"Sort by {column.label}",
            f"Order the process table by {column.label} (again: the other way)",
            _sort_by(app, column.key),
        )
    yield SystemCommand(
        "Filter processes (/)", "Show only processes matching a text", app.action_filter
    )
    yield SystemCommand(
        "My processes (m)",
        "Only your own processes, or everyone's again",
        app.dashboard.action_toggle_mine,
    )
    yield SystemCommand(
        "Tree view (t)",
        "Processes under their parents, or flat again",
        lambda: _table(app).action_toggle_tree(),
    )
    yield SystemCommand(
        "Process details (enter)",
        "All details of the selected process: environment, container, history",
        app.action_process_details,
    )
    if not app.readonly:
        yield SystemCommand(
            "Tag / untag process (space)",
            "Mark the selected process; kill signals all tagged ones",
            lambda: _table(app).action_toggle_tag(),
        )
        yield SystemCommand(
            "Kill process (k)",
            "Signal the selected or tagged processes (asks first)",
            app.action_kill,
        )
    yield SystemCommand(
        "Fit lines per GPU (e)",
        "Expand or collapse the fit verdicts under the host line",
        app.dashboard.action_toggle_fit_lines,
    )
    yield SystemCommand("GPU catalog (c)", "Known cards and architectures", app.action_catalog)
    yield SystemCommand("Will my model fit? (f)", "The fit checker", app.action_fit)
    yield SystemCommand(
        "GPU history (h)", "Power, temperature, PCIe... over 1 / 5 / 15 min", app.action_history
    )
    yield SystemCommand(
        "Watch process (w)",
        "An alert with its peak GPU memory when the selected process ends",
        app.action_watch_process,
    )
    yield SystemCommand(
        "Alerts (a)", "What fired and cleared this session; mute a rule", app.action_alerts
    )
    yield SystemCommand("Help (?)", "All keys", app.action_help)
    yield from column_commands(app)


def _toggle_column(app: DashboardKeys, key: str) -> Callable[[], None]:
    def run() -> None:
        table = _table(app)
        table.set_user_hidden(table.user_hidden ^ {key})

    return run


def column_commands(app: DashboardKeys) -> Iterable[SystemCommand]:
    """The column chooser: hide or show each column but GPU, PID and Command (saved at exit
    in settings.toml's hidden_columns, as a hand edit was)."""
    hidden = _table(app).user_hidden
    for column in COLUMNS:
        if column.key in KEPT_COLUMNS:
            continue
        verb = "Show" if column.key in hidden else "Hide"
        yield SystemCommand(
            f"{verb} column {column.label}",
            f"Column chooser: {verb.lower()} the process table's {column.label} column "
            "(kept in settings.toml)",
            _toggle_column(app, column.key),
        )
