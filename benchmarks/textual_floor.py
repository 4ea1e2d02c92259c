"""The floor under any Textual GPU monitor: what Textual and pynvml cost alone.

Issue 11 asks the dashboard for under 1 % of a core at 1 s and under 40 MiB.
This app is the least a Textual monitor can be, so that the peers benchmark
can print that floor beside gputui in the same run:

- `--mode bare`: a Textual app (Header, one Static, Footer) whose clock line
  changes every second and that loads pynvml: the cost of Textual itself.
- `--mode static` (default): the same app reading, every second, what
  gputui's first screen reads most of (per GPU: name, utilization, memory,
  temperature, power and the compute processes) through pynvml and showing
  it as the text of one Static (a line per GPU, a line per process): the
  cheapest way Textual shows changing data. No history, no sparklines, no
  host figures, no fit line, no sorting.
- `--mode datatable`: the same readings in a DataTable updated cell by cell,
  the way a Textual tutorial would write it.

Run it as a watch command of ../shared/fakenvml/bench-peers.sh, e.g.
  WATCH_EXTRA="textual floor=.venv/bin/python benchmarks/textual_floor.py;..."
It quits on q or ctrl+c (the benchmark stops monitors with ctrl+c).
"""

from __future__ import annotations

import argparse
import time

import pynvml
from textual.app import App, ComposeResult
from textual.widgets import DataTable, Footer, Header, Static

GPU_COLUMNS = ("GPU", "name", "util %", "memory MiB", "temp C", "power W")
PROC_COLUMNS = ("pid", "GPU mem MiB")


class FloorApp(App[None]):
    """One table of NVML readings, refreshed at a fixed interval."""

    BINDINGS = [("q", "quit", "Quit"), ("ctrl+c", "quit", "Quit")]

    def __init__(self, mode: str, interval: float) -> None:
        super().__init__()
        self.mode = mode
        self.interval = interval
        self.handles: list[object] = []

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(id="clock")
        if self.mode == "static":
            yield Static(id="text")
        elif self.mode == "datatable":
            yield DataTable(id="table")
        yield Footer()

    def on_mount(self) -> None:
        pynvml.nvmlInit()
        count = pynvml.nvmlDeviceGetCount()
        self.handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(count)]
        if self.mode == "datatable":
            self.query_one(DataTable).add_columns(*GPU_COLUMNS)
        self.tick()
        self.set_interval(self.interval, self.tick)

    def tick(self) -> None:
        self.query_one("#clock", Static).update(time.strftime("%H:%M:%S"))
        if self.mode == "bare":
            return
        rows = self.read()
        if self.mode == "static":
            lines = [
                "  ".join(f"{v!s:>{len(c)}}" for v, c in zip(values, GPU_COLUMNS, strict=True))
                for _, values in rows
            ]
            self.query_one("#text", Static).update("\n".join(lines))
            return
        table = self.query_one(DataTable)
        wanted = {key for key, _ in rows}
        for key in [k.value for k in table.rows if k.value not in wanted]:
            table.remove_row(key)
        for key, values in rows:
            if key in table.rows:
                for column, value in zip(table.columns, values, strict=True):
                    table.update_cell(key, column, value)
            else:
                table.add_row(*values, key=key)

    def read(self) -> list[tuple[str, tuple[object, ...]]]:
        """One reading of every GPU and its processes: (row key, cell values)."""
        rows: list[tuple[str, tuple[object, ...]]] = []
        for i, h in enumerate(self.handles):
            util = pynvml.nvmlDeviceGetUtilizationRates(h).gpu
            mem = pynvml.nvmlDeviceGetMemoryInfo(h)
            temp = pynvml.nvmlDeviceGetTemperature(h, pynvml.NVML_TEMPERATURE_GPU)
            power = pynvml.nvmlDeviceGetPowerUsage(h) / 1000
            name = pynvml.nvmlDeviceGetName(h)
            rows.append((f"gpu{i}", (str(i), name, util, mem.used >> 20, temp, f"{power:.0f}")))
            for p in pynvml.nvmlDeviceGetComputeRunningProcesses(h):
                used = (p.usedGpuMemory or 0) >> 20
                rows.append((f"p{i}-{p.pid}", (f"  {p.pid}", "", "", used, "", "")))
        return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mode", choices=("bare", "static", "datatable"), default="static")
    ap.add_argument("--interval", type=float, default=1.0, help="seconds between reads")
    args = ap.parse_args()
    if not 0.1 <= args.interval <= 60:
        ap.error("--interval: between 0.1 and 60 seconds")
    FloorApp(args.mode, args.interval).run()


if __name__ == "__main__":
    main()
