"""What the dashboard's keys do: the polling pace, the process table, and the screens
they open (help, kill, process and device details, catalog, fit, history).

A mixin of GpuTuiApp (app.py), which owns the data these read: the latest
snapshot, the histories, the kill policy. Kept apart so that the app module
is about polling and drawing, this one about the user's requests.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from textual.widgets import DataTable

from gputui.history.metrics import History
from gputui.history.processes import ProcessHistory
from gputui.model.snapshot import GpuProcess, Snapshot
from gputui.sources.host.source import CONTAINER_NOTICE
from gputui.sources.host.source import why_not_visible as host_why_not_visible
from gputui.tui.poller import Poller
from gputui.tui.screens.dashboard import DashboardScreen
from gputui.tui.views.kill import KillPolicy
from gputui.tui.widgets.gpu_panel import GpuPanel
from gputui.tui.widgets.process_table import ProcessTable

if TYPE_CHECKING:
    from textual.app import App

    from gputui.tui.alert_log import AlertLog
    from gputui.tui.screens.process import ExtrasOf

    _AppBase = App[int]
else:
    _AppBase = object

INTERVALS = (0.25, 0.5, 1.0, 2.0, 3.0, 5.0, 10.0, 30.0)

# Shown in the help screen; the footer shows the BINDINGS marked show=True.
HELP_KEYS = [
    ("q, ctrl+c", "quit"),
    ("ctrl+z", "suspend to the shell (fg resumes)"),
    ("p", "pause / resume polling"),
    ("+ / -", "poll faster / slower"),
    ("s", "cycle the sort column"),
    ("r", "reverse the sort order"),
    ("/", "filter processes by text"),
    ("m", "my processes only / everyone's"),
    ("enter", "all details of the selected process, or of the focused GPU"),
    ("t", "processes as a tree under their parents / flat"),
    ("left / right", "scroll the command column sideways"),
    ("space", "tag / untag the process (k signals all tagged)"),
    ("k", "kill the selected process (asks first: SIGINT i, SIGTERM t, SIGKILL K)"),
    ("mouse", "click a header: sort; a row: select (again: details); a GPU: its details"),
    ("tab / shift+tab", "move between panels"),
    ("c", "GPU catalog"),
    ("f", "will my model fit?"),
    ("e", "fit line: one summary line / one line per GPU (or click it)"),
    ("h", "history graphs of a GPU (w: 1 / 5 / 15 min)"),
    ("a", "alerts: what fired and cleared this session (m: mute a rule)"),
    ("w", "watch the selected process: an alert with its peak memory when it ends"),
    ("?", "this help"),
]


class DashboardActions(_AppBase):
    """The key actions; the attributes below are GpuTuiApp's."""

    HELP_KEYS = HELP_KEYS
    dashboard: DashboardScreen
    poller: Poller[Snapshot]
    latest_snapshot: Snapshot | None
    readonly: bool
    kill_policy: KillPolicy
    history: History
    process_history: ProcessHistory
    process_extras: ExtrasOf
    models_path: Path | None
    alert_log: AlertLog

    if TYPE_CHECKING:

        def _show_header(self) -> None: ...  # the app's (app.py)

    # -- the process table ------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return not (action == "kill" and self.readonly)

    def action_cycle_sort(self) -> None:
        self.dashboard.query_one(ProcessTable).cycle_sort()

    def action_reverse_sort(self) -> None:
        table = self.dashboard.query_one(ProcessTable)
        table.set_sort(table.sort_column, not table.sort_reverse)

    def action_filter(self) -> None:
        if self.screen is self.dashboard:
            self.dashboard.open_filter()

    # -- the screens the keys open ----------------------------------------------------------

    # Each screen is imported when first opened: the first frame needs none of them.

    def action_help(self) -> None:
        from gputui.tui.screens.help import HelpScreen

        if not isinstance(self.screen, HelpScreen):
            keys = [k for k in self.HELP_KEYS if not (self.readonly and k[0] in ("k", "space"))]
            self.push_screen(HelpScreen(keys))

    def action_kill(self) -> None:
        if self.readonly or self.screen is not self.dashboard:
            return
        table = self.dashboard.query_one(ProcessTable)
        procs = table.tagged_processes
        if not procs:
            proc = table.selected
            procs = [proc] if proc is not None else []
        if not procs:
            self.notify("select a process first", severity="warning")
            return
        snap = self.latest_snapshot
        allowed, refusals = self.kill_policy.check_all(
            procs,
            simulated=snap is None or snap.simulated,
            listed_at=snap.timestamp if snap is not None else None,
        )
        if not allowed:
            self.notify(
                "\n".join(refusals) or "cannot signal this process",
                title="kill refused",
                severity="error",
                timeout=6,
                markup=False,
            )
            return
        idents = [ident for _, ident in allowed]
        from gputui.tui.screens.kill import KillScreen

        def done(sig: int | None) -> None:
            if sig is None:
                return
            # Re-checked at the moment of signalling, one process at a time: the dialog
            # may have stayed open while one exited and its PID went to someone else.
            results = self.kill_policy.kill_all(idents, sig)
            table.clear_tags()
            self.notify(
                "\n".join(message for _, message in results),
                severity="information" if all(sent for sent, _ in results) else "error",
                timeout=5,
                markup=False,
            )

        self.push_screen(KillScreen([p for p, _ in allowed], refusals), done)

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        """Enter or a click on a process row: its full details."""
        if self.screen is not self.dashboard:
            return
        self._open_details(
            self.dashboard.query_one(ProcessTable).processes.get(str(event.row_key.value))
        )

    def action_process_details(self) -> None:
        if self.screen is self.dashboard:
            self._open_details(self.dashboard.query_one(ProcessTable).selected)

    def _open_details(self, proc: GpuProcess | None) -> None:
        if proc is not None:
            from gputui.tui.screens.process import ProcessScreen

            snap = self.latest_snapshot
            real = snap is not None and not snap.simulated
            self.push_screen(
                ProcessScreen(
                    proc,
                    self.why_not_visible,
                    listed_at=snap.timestamp if snap is not None else None,
                    history=self.process_history.series,
                    extras=self.process_extras if real else None,
                    devices=snap.devices if snap is not None else (),
                    snapshot=snap,
                    models_path=self.models_path,
                )
            )

    def on_gpu_panel_selected(self, event: GpuPanel.Selected) -> None:
        """Enter or a click on a GPU panel: all its facts and MIG devices (screens/device.py)."""
        snap = self.latest_snapshot
        dev = next((d for d in snap.devices if d.index == event.index), None) if snap else None
        if snap is not None and dev is not None and self.screen is self.dashboard:
            from gputui.tui.screens.device import DeviceScreen

            self.push_screen(DeviceScreen(dev, snap.processes))

    def why_not_visible(self, proc: GpuProcess) -> str:
        """Why a listed process has no host details: exited, another namespace, no permission."""
        from gputui.tui.screens.process import NOT_VISIBLE

        snap = self.latest_snapshot
        if snap is None or snap.simulated:
            return NOT_VISIBLE  # demo data says so itself; its PIDs are made up
        if CONTAINER_NOTICE in snap.notices:
            return NOT_VISIBLE + " (gputui runs in a container)"
        return host_why_not_visible(proc.pid)

    def action_catalog(self) -> None:
        # Imported here, not at the top: the dashboard starts without the catalog's and the
        # fit engine's imports. A screen that fails to import raises (never a quiet notice).
        from gputui.tui.screens.catalog import CatalogScreen

        snap = self.latest_snapshot
        # The GPU chosen on the dashboard (focused panel, else the selected process's GPU)
        # is the one compared with; the devices tell the screen which are lost.
        panel = self.focused if isinstance(self.focused, GpuPanel) else None
        proc = self.dashboard.query_one(ProcessTable).selected
        gpu = panel.index if panel else proc.gpu_index if proc else None
        self.push_screen(CatalogScreen(snap.devices if snap else [], gpu=gpu))

    def action_fit(self) -> None:
        from gputui.tui.screens.fit import FitScreen  # as the catalog's: here, and loud

        # As the Catalog: the focused GPU panel, else the selected process's GPU (and its MIG
        # instance) is the one the Fit screen shows first.
        panel = self.focused if isinstance(self.focused, GpuPanel) else None
        proc = self.dashboard.query_one(ProcessTable).selected
        gpu = panel.index if panel else proc.gpu_index if proc else None
        instance = proc.gpu_instance_id if proc and not panel else None
        screen = FitScreen(self.models_path, gpu=gpu, gpu_instance=instance)
        self.push_screen(screen)
        if self.latest_snapshot is not None:
            screen.update_snapshot(self.latest_snapshot)

    def action_watch_process(self) -> None:
        if self.screen is not self.dashboard:
            return
        proc = self.dashboard.query_one(ProcessTable).selected
        if proc is None:
            self.notify("select a process first", severity="warning")
            return
        rule = next(r for r in self.alert_log.engine.rules if r.name == "process_ended")
        if rule.muted:
            self.notify("the process_ended alert is muted (a: alerts)", severity="warning")
            return
        if self.alert_log.engine.watch(proc.pid):
            self.notify(f"watching process {proc.pid}: an alert when it ends", timeout=4)
        else:
            self.notify(f"process {proc.pid} is watched already", timeout=4)

    def action_alerts(self) -> None:
        if self.screen is not self.dashboard:
            return
        from gputui.tui.screens.alerts import AlertsScreen

        self.push_screen(AlertsScreen(self.alert_log))

    def action_history(self) -> None:
        if self.screen is not self.dashboard:
            return
        from gputui.tui.screens.history import HistoryScreen

        proc = self.dashboard.query_one(ProcessTable).selected
        self.push_screen(
            HistoryScreen(self.history, self.latest_snapshot, proc.gpu_index if proc else None)
        )
