"""What one dashboard refresh costs, and what the dashboard costs over time.

Prints figures; asserts nothing (timings on a shared 2-core box are noise for tests).

1. refresh: median CPU per refresh split into poll (the source, in the
   worker thread), diff (apply_snapshot: widgets take the new values) and
   render (Textual settling messages and idle work, then the frame as
   Textual's update timer draws it: a layout pass only where one was asked
   for, and the dirty regions through the compositor to the terminal), the
   diff by part (each widget's update, the history) and the render by widget,
   plus widget refreshes and layout passes per tick, for 1, 8 and 16 GPUs
   with 50 processes whose values change every tick.
2. idle cost: the real `gputui --demo` (8 GPUs) in a tmux pane (--size) at
   the default 1 s interval: CPU % of one core and CPU seconds per minute over
   a window, from /proc via psutil, plus resident memory. Falls back to a
   headless run when tmux is missing.
3. startup: wall time from spawning `gputui --demo` in tmux to the first frame
   that shows a GPU panel (printed with 2).

With --baseline CHECKOUT the same figures of another checkout are printed
beside these, from the same run: the refresh splits alternate, and the tmux
panes run at once so that both see the same load on a shared box.

Run: .venv/bin/python benchmarks/tui.py [--window 20] [--ticks 40] [--skip-tmux]
     [--size 200x50] [--gpus 1,8,16] [--baseline /tmp/gputui-main]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import psutil
from textual.widget import Widget

from gputui.core.resources import scenarios_dir
from gputui.model.snapshot import DeviceSnapshot, GpuProcess, Snapshot
from gputui.sources.simulated.source import SimulatedSource
from gputui.tui.app import GpuTuiApp
from gputui.tui.widgets.fit_line import FitLine

ROOT = Path(__file__).resolve().parent.parent
GPUTUI = ROOT / ".venv" / "bin" / "gputui"


class FrozenSource:
    """Hands out whatever the benchmark last set; the app's own polls then change nothing."""

    name = "simulated"

    def __init__(self, snap: Snapshot) -> None:
        self.snap = snap

    def poll(self) -> Snapshot:
        return self.snap

    def close(self) -> None:
        pass


def synthetic(base: Snapshot, n_gpus: int, n_procs: int, tick: int) -> Snapshot:
    """`n_gpus` devices cloned from the 8-GPU scenario and `n_procs` processes, values moving per tick."""
    devices: list[DeviceSnapshot] = []
    for i in range(n_gpus):
        src = base.devices[i % len(base.devices)]
        sample = src.sample
        if sample is not None:
            sample = replace(
                sample,
                utilization_gpu=(tick * 7 + i * 13) % 101,
                temperature_c=40 + (tick + i) % 40,
            )
        devices.append(replace(src, info=replace(src.info, index=i), sample=sample))
    templates = base.processes or (GpuProcess(gpu_index=0, pid=1, type="compute"),)
    procs = []
    for k in range(n_procs):
        t = templates[k % len(templates)]
        procs.append(
            replace(
                t,
                gpu_index=k % n_gpus,
                pid=100_000 + k,
                sm_util=(tick + k) % 100,
                cpu_percent=float((tick * 3 + k) % 200),
                running_s=(t.running_s or 0.0) + tick,
            )
        )
    return replace(
        base, devices=tuple(devices), processes=tuple(procs), timestamp=base.timestamp + tick
    )


class RenderTimer:
    """UI-thread CPU spent in each widget class's render_lines (what the compositor asks for)."""

    def __init__(self) -> None:
        self.by_class: dict[str, float] = {}
        self._patched: list[tuple[type, object]] = []

    def __enter__(self) -> RenderTimer:
        timer = self
        classes = {Widget, *_all_subclasses(Widget)}
        for cls in classes:
            if "render_lines" not in cls.__dict__:
                continue
            orig = cls.__dict__["render_lines"]

            def timed(widget: Widget, crop: object, _orig: object = orig) -> object:
                t0 = time.thread_time()
                try:
                    return _orig(widget, crop)  # type: ignore[operator]
                finally:
                    # Nested calls (a subclass calling super) count once, in the outermost.
                    if getattr(widget, "_bench_depth", 0) == 0:
                        name = type(widget).__name__
                        timer.by_class[name] = (
                            timer.by_class.get(name, 0.0) + time.thread_time() - t0
                        )

            def outer(widget: Widget, crop: object, _timed: object = timed) -> object:
                depth = getattr(widget, "_bench_depth", -1) + 1
                widget._bench_depth = depth  # type: ignore[attr-defined]
                try:
                    return _timed(widget, crop)  # type: ignore[operator]
                finally:
                    widget._bench_depth = depth - 1  # type: ignore[attr-defined]

            self._patched.append((cls, orig))
            cls.render_lines = outer  # type: ignore[attr-defined]
        return self

    def __exit__(self, *exc: object) -> None:
        for cls, orig in self._patched:
            cls.render_lines = orig  # type: ignore[attr-defined]


def _all_subclasses(cls: type) -> set[type]:
    out = set()
    for sub in cls.__subclasses__():
        out.add(sub)
        out |= _all_subclasses(sub)
    return out


class DiffTimer:
    """UI-thread CPU in each part of the diff (what apply_snapshot hands each widget)."""

    PARTS = (
        ("GpuPanel", "update_device", "gpu panels"),
        ("ProcessTable", "set_processes", "process table"),
        ("HostPanel", "update_host", "host"),
        ("FitLine", "update_snapshot", "fit line"),
        ("History", "add", "history"),
        ("ProcessHistory", "add", "process history"),
    )

    def __init__(self) -> None:
        self.by_part: dict[str, float] = {}
        self._patched: list[tuple[type, str, object]] = []

    def __enter__(self) -> DiffTimer:
        from gputui.history.metrics import History
        from gputui.history.processes import ProcessHistory
        from gputui.tui.widgets.gpu_panel import GpuPanel
        from gputui.tui.widgets.host_panel import HostPanel
        from gputui.tui.widgets.process_table import ProcessTable

        classes = {
            "GpuPanel": GpuPanel,
            "ProcessTable": ProcessTable,
            "HostPanel": HostPanel,
            "FitLine": FitLine,
            "History": History,
            "ProcessHistory": ProcessHistory,
        }
        for cls_name, method, part in self.PARTS:
            cls = classes[cls_name]
            orig = getattr(cls, method)

            def timed(
                *args: object, _orig: object = orig, _part: str = part, **kw: object
            ) -> object:
                t0 = time.thread_time()
                try:
                    return _orig(*args, **kw)  # type: ignore[operator]
                finally:
                    self.by_part[_part] = self.by_part.get(_part, 0.0) + time.thread_time() - t0

            self._patched.append((cls, method, orig))
            setattr(cls, method, timed)
        return self

    def __exit__(self, *exc: object) -> None:
        for cls, method, orig in self._patched:
            setattr(cls, method, orig)


class RefreshCounter:
    """Counts Widget.refresh calls per widget class, and how many asked for a layout pass."""

    def __init__(self) -> None:
        self.by_class: dict[str, int] = {}
        self.layouts = 0
        self._orig = Widget.refresh

    def __enter__(self) -> RefreshCounter:
        counter, orig = self, self._orig

        def counting(widget: Widget, *args: object, **kw: object) -> object:
            name = type(widget).__name__
            counter.by_class[name] = counter.by_class.get(name, 0) + 1
            if kw.get("layout"):
                counter.layouts += 1
            return orig(widget, *args, **kw)  # type: ignore[arg-type]

        Widget.refresh = counting  # type: ignore[assignment,method-assign]
        return self

    def __exit__(self, *exc: object) -> None:
        Widget.refresh = self._orig  # type: ignore[method-assign]


async def refresh_cost(
    n_gpus: int, n_procs: int, ticks: int, size: tuple[int, int] = (120, 40)
) -> dict[str, float | str]:
    """Median UI-thread CPU ms per refresh: diff (apply_snapshot) and render (settle + frame).

    thread_time, not process_time: the fit line's estimate worker must not count as the UI's.
    """
    base = SimulatedSource.from_scenario(
        scenarios_dir() / "demo-8gpu.toml", clock=lambda: 600.0
    ).poll()
    first = synthetic(base, n_gpus, n_procs, 0)
    source = FrozenSource(first)
    app = GpuTuiApp(
        source, interval=3600.0, clock=lambda: "12:00:00", hostname="bench", card_lookup=None
    )
    walls: list[float] = []
    diffs: list[float] = []
    renders: list[float] = []
    counter = RefreshCounter()
    timer = RenderTimer()
    diff_timer = DiffTimer()
    async with app.run_test(size=size) as pilot:
        while app.latest_snapshot is None:
            await pilot.pause(0.01)
        # The fit line's first pass changes its height (a layout pass for everything under
        # it): let it land before measuring, or its timing decides what a tick costs.
        line = app.dashboard.query_one(FitLine)
        deadline = time.perf_counter() + 120
        while (line.passes == 0 or line.busy) and time.perf_counter() < deadline:
            await pilot.pause(0.05)
        await pilot.pause(0.1)
        with counter, timer, diff_timer:
            for tick in range(1, ticks + 1):
                snap = synthetic(base, n_gpus, n_procs, tick)
                source.snap = snap
                w0, c0 = time.perf_counter(), time.thread_time()
                await app.apply_snapshot(snap)  # diff: widgets take the new values
                c1 = time.thread_time()
                await pilot.pause()  # messages, idle work (table column widths)
                # The frame now, as Textual's own update timer draws it (layout only where
                # required, then the dirty regions), instead of waiting for its next tick.
                app.screen._on_timer_update()  # noqa: SLF001
                walls.append(time.perf_counter() - w0)
                diffs.append(c1 - c0)
                renders.append(time.thread_time() - c1)
    top = sorted(counter.by_class.items(), key=lambda kv: -kv[1])[:5]
    widgets = sorted(timer.by_class.items(), key=lambda kv: -kv[1])[:6]
    return {
        "wall_ms": statistics.median(walls) * 1000,
        "diff_ms": statistics.median(diffs) * 1000,
        "render_ms": statistics.median(renders) * 1000,
        "refreshes": sum(counter.by_class.values()) / ticks,
        "layouts": counter.layouts / ticks,
        "top": " ".join(f"{k}:{v / ticks:.1f}" for k, v in top),
        "widgets": " ".join(f"{k}:{v * 1000 / ticks:.1f}" for k, v in widgets),
        "diff_parts": " ".join(
            f"{k}:{v * 1000 / ticks:.2f}"
            for k, v in sorted(diff_timer.by_part.items(), key=lambda kv: -kv[1])
        ),
    }


def poll_cost(polls: int) -> float:
    """Median CPU ms of one poll of the simulated 8-GPU source with host enrichment (the worker's half)."""
    source = SimulatedSource.from_scenario(scenarios_dir() / "demo-8gpu.toml")
    source.poll()
    cpus = []
    for _ in range(polls):
        c0 = time.process_time()
        source.poll()
        cpus.append(time.process_time() - c0)
    source.close()
    return statistics.median(cpus) * 1000


def _tmux(*args: str) -> str:
    return subprocess.run(["tmux", *args], capture_output=True, text=True, check=False).stdout


def _app_pid(session: str) -> int | None:
    out = _tmux("display", "-p", "-t", session, "#{pane_pid}").strip()
    return int(out) if out.isdigit() else None


def _cpu_s(proc: psutil.Process) -> float:
    return float(sum(proc.cpu_times()[:2]))


def tmux_run(
    window_s: float, scenario: str, interval: float, size: tuple[int, int], commands: dict[str, str]
) -> dict[str, dict[str, float]]:
    """Each command (a gputui) in its own tmux pane at once, so that they share the box's load."""
    tag = f"gputui-bench-{os.getpid()}"
    args = f"--demo --scenario {scenarios_dir() / scenario} --interval {interval}"
    sessions = {label: f"{tag}-{n}" for n, label in enumerate(commands)}
    started: dict[str, float] = {}
    for label, cmd in commands.items():
        _tmux("kill-session", "-t", sessions[label])
        started[label] = time.perf_counter()
        subprocess.run(
            [
                "tmux",
                "new-session",
                "-d",
                "-s",
                sessions[label],
                "-x",
                str(size[0]),
                "-y",
                str(size[1]),
                f"exec {cmd} {args}",
            ],
            check=True,
        )
    try:
        first: dict[str, float] = {}
        deadline = time.perf_counter() + 60
        while len(first) < len(commands) and time.perf_counter() < deadline:
            for label, session in sessions.items():
                if label not in first and "UTIL" in _tmux("capture-pane", "-p", "-t", session):
                    first[label] = time.perf_counter() - started[label]
            time.sleep(0.01)
        procs = {}
        for label, session in sessions.items():
            pid = _app_pid(session)
            if pid is None or label not in first:
                raise RuntimeError(f"{label} did not start in tmux")
            procs[label] = psutil.Process(pid)
        time.sleep(3)  # warm-up: first polls, catalog lookup, first fit line pass
        c0 = {label: _cpu_s(p) for label, p in procs.items()}
        w0 = time.perf_counter()
        time.sleep(window_s)
        wall = time.perf_counter() - w0
        out = {}
        for label, p in procs.items():
            cpu = _cpu_s(p) - c0[label]
            out[label] = {
                "first_frame_s": first[label],
                "cpu_pct": 100 * cpu / wall,
                "cpu_s_per_min": 60 * cpu / wall,
                "rss_mib": p.memory_info().rss / 2**20,
                "threads": p.num_threads(),
            }
        return out
    finally:
        for session in sessions.values():
            _tmux("kill-session", "-t", session)


async def headless_cpu(window_s: float) -> dict[str, float]:
    source = SimulatedSource.from_scenario(scenarios_dir() / "demo-8gpu.toml")
    app = GpuTuiApp(source, interval=1.0, card_lookup=None)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause(3)
        c0 = time.process_time()
        w0 = time.perf_counter()
        await pilot.pause(window_s)
        cpu = time.process_time() - c0
        wall = time.perf_counter() - w0
    return {
        "cpu_pct": 100 * cpu / wall,
        "cpu_s_per_min": 60 * cpu / wall,
        "polls": float(app.poll_count),
    }


def _split(args: argparse.Namespace, cols: int, rows: int) -> None:
    print(
        f"   poll (simulated 8 GPUs + host; NVML: benchmarks/poll.py): {poll_cost(args.ticks):.1f} ms"
    )
    print("   GPUs  wall ms  diff ms  render ms  refreshes/tick  layouts/tick  most refreshed")
    for n in (int(x) for x in args.gpus.split(",")):
        r = asyncio.run(refresh_cost(n, 50, args.ticks, (cols, rows)))
        print(
            f"   {n:>4}  {r['wall_ms']:>7.1f}  {r['diff_ms']:>7.1f}  {r['render_ms']:>9.1f}"
            f"  {r['refreshes']:>14.1f}  {r['layouts']:>12.1f}  {r['top']}"
        )
        print(f"         diff by part: {r['diff_parts']}")
        print(f"         render by widget: {r['widgets']}", flush=True)


def _split_of(src: Path, argv: list[str]) -> str:
    """The refresh split of the gputui under `src` (a baseline checkout), in its own process."""
    env = dict(os.environ, PYTHONPATH=str(src))
    cmd = [sys.executable, str(Path(__file__).resolve()), "--split-only", *argv]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stdout


def _source_dir(path: str) -> Path:
    """A checkout or its src/ folder: the folder that holds the gputui package."""
    p = Path(path).resolve()
    for candidate in (p, p / "src"):
        if (candidate / "gputui" / "__init__.py").exists():
            return candidate
    raise SystemExit(f"--baseline {path}: no gputui package there (nor in its src/)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="gputui dashboard benchmark")
    parser.add_argument(
        "--ticks", type=int, default=40, help="refreshes per GPU count (default 40)"
    )
    parser.add_argument(
        "--window", type=float, default=20.0, help="seconds of steady running (default 20)"
    )
    parser.add_argument("--skip-tmux", action="store_true", help="no tmux run: headless CPU only")
    parser.add_argument(
        "--size", default="200x50", help="terminal COLSxROWS (default 200x50, issue 11's pane)"
    )
    parser.add_argument(
        "--gpus", default="1,8,16", help="GPU counts of the refresh split (default 1,8,16)"
    )
    parser.add_argument(
        "--baseline",
        metavar="CHECKOUT",
        help="another gputui checkout (e.g. `git worktree add /tmp/base main`): its figures"
        " beside these, measured in the same run (refresh splits alternating, tmux panes at once)",
    )
    parser.add_argument("--rounds", type=int, default=2, help="alternations with --baseline")
    parser.add_argument("--split-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    cols, rows = (int(x) for x in args.size.split("x"))
    split_argv = ["--ticks", str(args.ticks), "--size", args.size, "--gpus", args.gpus]
    if args.split_only:
        _split(args, cols, rows)
        return 0
    base = _source_dir(args.baseline) if args.baseline else None

    print(
        f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, textual {__import__('textual').__version__}"
    )
    print(f"\n1. one refresh, {cols}x{rows}, 50 processes: CPU ms split into poll (worker thread),")
    print("   diff (apply_snapshot: widgets take new values) and render (settle, then the frame);")
    print("   render ms by widget class (render_lines, what the compositor asked for)")
    if base is None:
        _split(args, cols, rows)
    else:
        for n in range(args.rounds):
            for label, src in (("baseline", base), ("this checkout", ROOT / "src")):
                print(f"   -- {label} ({src}), round {n + 1}")
                print(_split_of(src, split_argv), end="", flush=True)

    print("\n2. steady state at the default 1 s interval, 8 simulated GPUs")
    if not args.skip_tmux and shutil.which("tmux") and GPUTUI.exists():
        commands = {"this checkout": str(GPUTUI)}
        if base is not None:
            commands["baseline"] = f"env PYTHONPATH={base} {sys.executable} -m gputui"
        runs = tmux_run(args.window, "demo-8gpu.toml", 1.0, (cols, rows), commands)
        for label, r in runs.items():
            print(
                f"   {label}: tmux {cols}x{rows}, {args.window:g} s: CPU {r['cpu_pct']:.2f} % of a"
                f" core = {r['cpu_s_per_min']:.2f} CPU s/min; RSS {r['rss_mib']:.1f} MiB;"
                f" {r['threads']:.0f} threads; first frame with GPU panels after"
                f" {r['first_frame_s'] * 1000:.0f} ms (spawn to tmux capture)"
            )
    else:
        h = asyncio.run(headless_cpu(args.window))
        print(
            f"   headless ({args.window:g} s, {h['polls']:.0f} polls): CPU {h['cpu_pct']:.2f} %"
            f" of a core = {h['cpu_s_per_min']:.2f} CPU s/min"
        )
    print(f"   this benchmark process RSS: {psutil.Process().memory_info().rss / 2**20:.1f} MiB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
