"""Enter (or a click) on a process: everything known about it, the command unabridged.

The dialog follows the polls (the app hands every snapshot to the screen on
top): CPU, memory and running time move, and a process that leaves the list
says so instead of showing its last values as if it were still there.

Sparklines show the process's recent GPU memory and SM% (the app keeps them
per process, see `gputui.history.processes`). Its GPU-related environment
and container are read once, off the UI thread, when the dialog opens: only
for a real process the host can see, never for demo data, never kept or logged.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from pathlib import Path

from rich.table import Table
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.css.query import NoMatches
from textual.screen import ModalScreen
from textual.widgets import Static

from gputui.history.processes import started_at
from gputui.model.snapshot import DeviceSnapshot, GpuProcess, Snapshot
from gputui.sources.host.containers import ContainerRef
from gputui.sources.host.source import ProcessExtras
from gputui.tui.views import formatting as fmt
from gputui.tui.views.device_facts import instance_label

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (see sources/base.py)
if TYPE_CHECKING:  # the fit engine loads when a comparison is asked for, not with the screen
    from gputui.tui.views.process_compare import Comparison

NOT_VISIBLE = "no: another PID namespace"
SPARK_WIDTH = 40

InvisibleReason = Callable[[GpuProcess], str]
# (GPU memory, SM%) series of a process as listed at a time, oldest first
SeriesOf = Callable[[GpuProcess, float], tuple[Sequence[int | None], Sequence[int | None]]]
# The environment and container of a process that started at a time (None: unknown)
ExtrasOf = Callable[[int, float | None], ProcessExtras]


def history_text(memory: Sequence[int | None], sm: Sequence[int | None]) -> Text:
    """Two sparklines: memory on the scale of its own peak, SM% on 0-100."""
    text = Text(no_wrap=True)
    peak = max((v for v in memory if v is not None), default=None)
    mem_line = fmt.spark(memory, SPARK_WIDTH, hi=float(peak or 1))
    now_mem = memory[-1] if memory else None
    text.append("GPU memory  ", style="bold")
    text.append(mem_line)
    text.append(f"  {fmt.size(now_mem)} (peak {fmt.size(peak)})\n")
    now_sm = sm[-1] if sm else None
    text.append("SM          ", style="bold")
    text.append(fmt.spark(list(sm), SPARK_WIDTH))
    text.append(f"  {fmt.na(now_sm, '{}%')}")
    return text


def container_text(ref: ContainerRef | None) -> Text:
    if ref is None:
        return Text("none (a host process)")
    lines = [f"runtime    {ref.runtime}"]
    if ref.name:
        lines.append(f"name       {ref.name}")
    if ref.id:
        lines.append(f"id         {ref.id}")
    if ref.pod:
        lines.append(f"pod        {ref.pod}")
    if ref.pod_uid:
        lines.append(f"pod UID    {ref.pod_uid}")
    return Text("\n".join(lines))


def environment_text(extras: ProcessExtras) -> Text:
    if extras.environment is None:
        return Text(extras.environment_note or "not read", style="dim")
    if not extras.environment:
        return Text("no GPU-related variables set", style="dim")
    return Text("\n".join(f"{k}={v}" for k, v in extras.environment.items()))


def process_facts(
    p: GpuProcess, why_not_visible: str = NOT_VISIBLE, instance: str | None = None
) -> list[tuple[str, str]]:
    container = p.container or "-"
    if p.container and p.container_pid is not None:
        container += f" (PID {p.container_pid} inside)"
    gpu = [("GPU", str(p.gpu_index))]
    if instance is not None:
        gpu.append(("MIG instance", instance))
    return [
        ("PID", str(p.pid)),
        *gpu,
        ("type", p.type),
        ("user", p.user or fmt.NA),
        ("container", container),
        ("GPU memory", fmt.size(p.gpu_memory)),
        ("SM / memory util", f"{fmt.na(p.sm_util, '{}%')} / {fmt.na(p.mem_util, '{}%')}"),
        ("CPU", fmt.na(p.cpu_percent, "{:.1f}%")),
        ("host memory (RSS)", fmt.size(p.rss)),
        ("running", fmt.duration(p.running_s)),
        ("visible to gputui", "yes" if p.host_visible else why_not_visible),
    ]


def facts_table(
    p: GpuProcess, why_not_visible: str = NOT_VISIBLE, instance: str | None = None
) -> Table:
    table = Table(box=None, show_header=False, padding=(0, 2))
    table.add_column(style="bold", no_wrap=True)
    table.add_column()
    for name, value in process_facts(p, why_not_visible, instance):
        table.add_row(name, Text(value))  # literal: a str cell would be parsed as markup
    return table


class ProcessScreen(ModalScreen[None]):
    CSS_PATH = Path(__file__).with_name("process.tcss")
    BINDINGS = [
        Binding("escape,enter,q", "close", "Close"),
        Binding("c", "compare", "Compare with a configured model"),
    ]

    def __init__(
        self,
        proc: GpuProcess,
        why_not_visible: InvisibleReason | None = None,
        *,
        listed_at: float | None = None,
        history: SeriesOf | None = None,
        extras: ExtrasOf | None = None,
        devices: Sequence[DeviceSnapshot] = (),
        snapshot: Snapshot | None = None,
        models_path: Path | None = None,
    ) -> None:
        """`extras` None: nothing is read about the process (demo data, or read-only use);
        `devices` name the MIG instance the process runs in; `snapshot` (the latest poll)
        and `models_path` (the dashboard's models file) serve "compare" (`c`)."""
        super().__init__()
        self.snapshot = snapshot
        self.models_path = models_path
        self.proc = proc
        self.devices = devices
        self.gone = False  # no longer in the latest poll
        self._why = why_not_visible
        self.listed_at = listed_at
        self._history = history
        self._extras = extras
        self.extras: ProcessExtras | None = None

    def _reason(self) -> str:
        if self.proc.host_visible or self._why is None:
            return NOT_VISIBLE
        return self._why(self.proc)

    def _title(self) -> Text:
        if self.gone:
            return Text(f"Process {self.proc.pid}: no longer listed (it has exited)", style="bold")
        return Text(f"Process {self.proc.pid}")

    def _history_text(self, proc: GpuProcess | None = None) -> Text:
        if self._history is None or self.listed_at is None:
            return Text("no history kept", style="dim")
        memory, sm = self._history(proc or self.proc, self.listed_at)
        return history_text(memory, sm)

    def _first_extras_text(self) -> tuple[Text, Text]:
        if self._extras is None:
            note = "not read: simulated process (demo data)"
        elif not self.proc.host_visible:
            note = "not read: the host cannot see this process"
        else:
            note = "reading…"
        return Text(self.proc.container or "-", style="dim"), Text(note, style="dim")

    def compose(self) -> ComposeResult:
        container, env = self._first_extras_text()
        with VerticalScroll(id="process-dialog"):
            yield Static(self._title(), id="process-title")
            yield Static(
                facts_table(self.proc, self._reason(), instance_label(self.proc, self.devices)),
                id="process-facts",
            )
            yield Static("history", classes="process-label")
            yield Static(self._history_text(), id="process-history")
            yield Static("container", classes="process-label")
            yield Static(container, id="process-container")
            yield Static("environment (GPU-related variables)", classes="process-label")
            yield Static(env, id="process-env")
            yield Static("compare with a configured model", classes="process-label")
            yield Static(
                Text("c: each model's estimate beside this process's memory", style="dim"),
                id="process-compare",
            )
            yield Static("command", id="process-command-label", classes="process-label")
            # Literal text, wrapped: the full command line is the point of this screen.
            yield Static(self.proc.command or fmt.NA, id="process-command", markup=False)
            yield Static("escape closes this", id="process-hint")

    def on_mount(self) -> None:
        if self._extras is not None and self.proc.host_visible:
            start = started_at(self.proc, self.listed_at) if self.listed_at is not None else None
            self._read_extras(self._extras, self.proc.pid, start)

    @work(thread=True, exit_on_error=False, group="process-extras")
    def _read_extras(self, read: ExtrasOf, pid: int, start: float | None) -> None:
        extras = read(pid, start)
        with contextlib.suppress(RuntimeError):  # the app has stopped meanwhile
            self.app.call_from_thread(self._show_extras, extras)

    def _show_extras(self, extras: ProcessExtras) -> None:
        self.extras = extras
        with contextlib.suppress(NoMatches):  # closed before the read finished
            self.query_one("#process-env", Static).update(environment_text(extras))
            self.query_one("#process-container", Static).update(container_text(extras.container))

    def update_snapshot(self, snap: Snapshot) -> None:
        """Follow the process through the polls (called by the app for the screen on top)."""
        current = next(
            (
                p
                for p in snap.processes
                if p.pid == self.proc.pid and p.gpu_index == self.proc.gpu_index
            ),
            None,
        )
        gone = current is None
        self.devices = snap.devices
        self.snapshot = snap
        if current is not None:
            self.listed_at = snap.timestamp
            if self.is_mounted:  # a new point even when the values stand still
                self.query_one("#process-history", Static).update(self._history_text(current))
        if current is not None and current == self.proc and not self.gone:
            return
        self.gone = gone
        if current is not None:
            self.proc = current
        if not self.is_mounted:
            return
        self.query_one("#process-title", Static).update(self._title())
        self.query_one("#process-facts", Static).update(
            facts_table(self.proc, self._reason(), instance_label(self.proc, self.devices))
        )
        self.query_one("#process-command", Static).update(self.proc.command or fmt.NA)

    def action_close(self) -> None:
        self.dismiss(None)

    def action_compare(self) -> None:
        if self.snapshot is None:
            return
        self.query_one("#process-compare", Static).update(Text("estimating…", style="dim"))
        observed = self.proc.gpu_memory
        if self._history is not None and self.listed_at is not None:
            memory, _ = self._history(self.proc, self.listed_at)
            observed = max((v for v in memory if v is not None), default=observed)
        self._compare(self.snapshot, observed)

    @work(thread=True, exit_on_error=False, group="process-compare", exclusive=True)
    def _compare(self, snap: Snapshot, observed: int | None) -> None:
        from gputui.tui.views.process_compare import compare

        result = compare(self.models_path, snap, self.proc, observed)
        with contextlib.suppress(RuntimeError):  # the app has stopped meanwhile
            self.app.call_from_thread(self._show_compare, comparison_table(result))

    def _show_compare(self, shown: Table | Text) -> None:
        with contextlib.suppress(NoMatches):  # closed before the estimates finished
            self.query_one("#process-compare", Static).update(shown)


def comparison_table(result: Comparison) -> Table | Text:
    """The estimates (tensors + CUDA context + allocator reserve) beside the process's
    peak GPU memory while the dashboard watched, and the ratio."""
    if result.error is not None:
        return Text(result.error, style="dim")
    table = Table(box=None, padding=(0, 2), title_justify="left")
    for name in ("model", "tensors", "+context", "+allocator", "=estimate", "observed", "ratio"):
        table.add_column(name, no_wrap=True)
    seen = result.observed
    for r in result.rows:
        ratio = fmt.NA if seen is None or r.estimate <= 0 else f"{seen / r.estimate:.2f}"
        table.add_row(
            Text(r.model), fmt.size(r.tensors), fmt.size(r.context), fmt.size(r.allocator),
            fmt.size(r.estimate), fmt.size(seen), ratio,
        )  # fmt: skip
    card = result.card or fmt.NA
    table.caption = f"on {card}; observed: NVML's memory of the process (context + allocator)"
    for note in result.notes:
        table.caption += f"\n{note}"
    return table
