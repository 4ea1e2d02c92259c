"""Resident memory of the dashboard beside its floor, and where the MiB go.

Prints figures; asserts nothing.

1. running: `gputui --source nvml --interval 1` in tmux panes (--size, default
   200x50) beside `benchmarks/textual_floor.py` (--mode bare, static and
   datatable: Textual and pynvml alone) and an optional --baseline command, all
   started at once so that they see the same load; VmRSS, RssAnon and RssFile of
   each Python process from /proc at each --at second (default 10 and 60).
   gputui runs twice: with the catalog cache warm (a run like any after the
   first) and cold (the first run after an install or a catalog edit, where a
   child process validates the catalog and writes the cache); each in its own
   temporary cache folder.
2. imports: in a fresh interpreter that has imported Textual (App, Header,
   Static, DataTable, Footer) and initialised pynvml (the floor), the growth of
   RssAnon and RssFile as the dashboard's own module groups are imported, in
   the order the dashboard loads them.

Needs tmux, and NVML: a driver, or ../shared/fakenvml's library and scenario
(LD_LIBRARY_PATH and FAKE_NVML_SCENARIO, see its README). Byte-compile both
trees first (`python -m compileall -q src`), as an install is.

Run: .venv/bin/python benchmarks/rss.py [--at 10,60] [--size 200x50]
     [--baseline "/tmp/base/gputui-base --source nvml --interval 1"]
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
GPUTUI = [PYTHON, "-m", "gputui", "--source", "nvml", "--interval", "1"]
FLOOR = [PYTHON, str(ROOT / "benchmarks" / "textual_floor.py"), "--mode"]

# (label, modules): what the dashboard imports beyond the floor, in its order.
GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    # the dashboard's common lines skip argparse (commands/tui.py fast_args); on Linux its
    # polls read /proc and psutil waits for a dialog that needs it (sources/host/source.py)
    ("command line (no argparse)", ("gputui.cli", "gputui.commands.tui")),
    ("host telemetry (/proc; psutil on demand)", ("gputui.sources.host.procfs", "gputui.sources.host.source")),
    ("NVML source", ("gputui.sources.nvml.source",)),
    ("dashboard UI (app, screens, widgets)", ("gputui.tui.app", "gputui.tui.run")),
    ("catalog, read from its cache (card labels)", ("gputui.catalog",)),
    (
        "fit engine (the fit line, after the first frame)",
        (
            "gputui.tui.views.fit_pass",
            "gputui.fit.transformer.estimate",
            "gputui.fit.importers.keras",
            "gputui.fit.importers.hf",
        ),
    ),
)

_IMPORTS = """
import importlib, json, sys
def rss():
    f = dict(line.split(":", 1) for line in open("/proc/self/status"))
    return [int(f[k].split()[0]) / 1024 for k in ("RssAnon", "RssFile")]
import pynvml
try:
    pynvml.nvmlInit()
except pynvml.NVMLError:
    pass
from textual.app import App
from textual.widgets import DataTable, Footer, Header, Static
out = [["floor: Textual + pynvml", len(sys.modules)] + rss()]
for label, modules in json.loads(sys.argv[1]):
    for name in modules:
        importlib.import_module(name)
    out.append([label, len(sys.modules)] + rss())
print(json.dumps(out))
"""


def status(pid: int) -> tuple[float, float, float] | None:
    try:
        text = Path(f"/proc/{pid}/status").read_text()
        fields = dict(line.split(":", 1) for line in text.splitlines() if ":" in line)
    except OSError:
        return None
    vm, anon, file = (int(fields[k].split()[0]) / 1024 for k in ("VmRSS", "RssAnon", "RssFile"))
    return vm, anon, file


def python_pid(session: str) -> int | None:
    """The Python process of a pane: the pane's own process, or its child (a wrapper script)."""
    out = subprocess.run(
        ["tmux", "list-panes", "-t", session, "-F", "#{pane_pid}"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.split()
    if not out:
        return None
    pid = int(out[0])
    for _ in range(3):
        try:
            if b"python" in Path(f"/proc/{pid}/cmdline").read_bytes():
                return pid
            children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        except OSError:
            return None
        if not children:
            return None
        pid = int(children[0])
    return None


def running(
    commands: list[tuple[str, str, dict[str, str]]], at: list[int], size: tuple[int, int]
) -> None:
    tag = f"rssbench-{os.getpid()}"
    sessions = []
    for n, (label, command, env) in enumerate(commands):
        session = f"{tag}-{n}"
        envs = [a for k, v in env.items() for a in ("-e", f"{k}={v}")]
        subprocess.run(
            ["tmux", "new-session", "-d", "-s", session, "-x", str(size[0]), "-y", str(size[1])]
            + envs
            + [command],
            check=True,
        )
        sessions.append((label, session))
    start = time.monotonic()
    try:
        time.sleep(1.0)
        pids = {label: python_pid(session) for label, session in sessions}
        width = max(len(label) for label, _ in sessions)
        print(f"{'':{width}}  " + "  ".join(f"{f'{t} s: VmRSS / anon / file':>30}" for t in at))
        rows: dict[str, list[str]] = {label: [] for label, _ in sessions}
        for t in at:
            time.sleep(max(0.0, start + t - time.monotonic()))
            for label, _ in sessions:
                pid = pids[label]
                got = status(pid) if pid is not None else None
                rows[label].append(
                    "gone" if got is None else f"{got[0]:6.1f} / {got[1]:5.1f} / {got[2]:5.1f}"
                )
        for label, _ in sessions:
            print(f"{label:{width}}  " + "  ".join(f"{cell:>30}" for cell in rows[label]))
    finally:
        for _, session in sessions:
            subprocess.run(["tmux", "kill-session", "-t", session], check=False)


def imports(env: dict[str, str]) -> None:
    import json

    done = subprocess.run(
        [PYTHON, "-c", _IMPORTS, json.dumps(GROUPS)],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, **env},
        cwd=ROOT / "src",
    )
    rows = json.loads(done.stdout)
    print(f"{'imported':52} {'modules':>7} {'anon MiB':>9} {'file MiB':>9}")
    (label, mods, anon, file), *rest = rows
    print(f"{label:52} {mods:7d} {anon:9.1f} {file:9.1f}")
    for label, m, a, f in rest:
        print(f"{'+ ' + label:52} {m - mods:+7d} {a - anon:+9.2f} {f - file:+9.2f}")
        mods, anon, file = m, a, f


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--at", default="10,60", help="seconds after start to read /proc (10,60)")
    ap.add_argument("--size", default="200x50", help="tmux pane size (200x50)")
    ap.add_argument("--baseline", help="another dashboard command to run beside these")
    ap.add_argument("--skip-running", action="store_true", help="only the import figures")
    args = ap.parse_args()
    at = sorted(int(t) for t in args.at.split(","))
    cols, rows = (int(v) for v in args.size.split("x"))
    if not os.environ.get("FAKE_NVML_SCENARIO"):
        print("note: FAKE_NVML_SCENARIO is not set: the dashboard reads the real NVML")
    with tempfile.TemporaryDirectory(prefix="gputui-rss-") as tmp:
        warm, cold = Path(tmp, "warm"), Path(tmp, "cold")
        subprocess.run(
            [PYTHON, "-c", "from gputui.catalog import load_catalog; load_catalog()"],
            env={**os.environ, "GPUTUI_CACHE_DIR": str(warm)},
            check=True,
        )
        keep = {
            k: os.environ[k] for k in ("LD_LIBRARY_PATH", "FAKE_NVML_SCENARIO") if k in os.environ
        }
        print("== imports (a fresh interpreter; the catalog cache warm)")
        imports({**keep, "GPUTUI_CACHE_DIR": str(warm)})
        if args.skip_running:
            return 0
        if shutil.which("tmux") is None:
            print("tmux not found: no running figures")
            return 0
        commands = [
            ("gputui (cache warm)", shlex.join(GPUTUI), {**keep, "GPUTUI_CACHE_DIR": str(warm)}),
            ("gputui (first run)", shlex.join(GPUTUI), {**keep, "GPUTUI_CACHE_DIR": str(cold)}),
        ]
        if args.baseline:
            commands.append(("baseline", args.baseline, {**keep, "GPUTUI_CACHE_DIR": str(warm)}))
        for mode in ("bare", "static", "datatable"):
            commands.append((f"floor: textual_floor {mode}", shlex.join([*FLOOR, mode]), keep))
        print(f"\n== running, tmux {args.size}, side by side (MiB)")
        running(commands, at, (cols, rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
