"""Start-up: exec to the first full frame, and resident memory then, beside Textual's floor.

Prints figures; asserts nothing (timings on a shared box are noise for tests).

Each variant is started in its own tmux pane (--size, default 200x50) through a
private tmux server; the pane is read through one tmux control-mode client
(`tmux -C`, no process spawned per read) every few milliseconds until the screen
shows every GPU of the scenario and one of its processes: the first full frame.
Measured from the moment the pane is asked for (the launcher script then execs the
command) to the first read showing that frame; resident memory (VmRSS) and the CPU
time so far (utime+stime of all its threads, less noisy than wall time on a loaded
box) are read from /proc right then. The variants alternate within each round (the order rotating), so
that all of them see the same load on a shared box; one round first is a warm-up
(file cache, the catalog cache), not counted. Then all variants run at once and
their VmRSS is read again after --settle seconds (past the fit line's first pass
and the card labels), so that memory moved past the first frame still shows.

Variants: `gputui` (this checkout's src, `--source nvml --interval 1`), the
`--baseline` checkout the same way, `benchmarks/textual_floor.py` (static mode:
the same NVML readings as the text of one Static, the least a Textual monitor
can be) and nvitop (`--nvitop PATH`, e.g. from ../shared/fakenvml/setup-peers.sh).
Each gputui runs with an empty working directory and config directory (no models
file, no saved settings) and a warm catalog cache of its own.

Needs tmux and NVML: ../shared/fakenvml's library and a scenario with real PIDs
(LD_LIBRARY_PATH and FAKE_NVML_SCENARIO, see its README; start-procs.sh).

Run: .venv/bin/python benchmarks/startup.py [--reps 7] [--size 200x50] [--settle 10]
     [--baseline /tmp/base/src] [--nvitop /tmp/peers/bin/nvitop]
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
AIM = 1.2  # issue 22: first frame and resident memory within 1.2x the static floor
POLL_S = 0.004
FRAME_TIMEOUT_S = 30.0
NVITOP_POWER = re.compile(r"\d+W / \d+W")


@dataclass
class Variant:
    label: str
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    frames_ms: list[float] = field(default_factory=list)
    rss_mib: list[float] = field(default_factory=list)
    cpu_ms: list[float] = field(default_factory=list)
    settled_mib: float | None = None


class Scenario:
    """What the first full frame must show: every GPU of the scenario and one of its PIDs."""

    def __init__(self, path: Path) -> None:
        text = path.read_text()
        names = re.findall(r"^\s*name\s*=\s*(.+?)\s*(?:#.*)?$", text, re.M)
        self.gpus = len(names)
        # "NVIDIA H100 80GB HBM3" -> "H100": every monitor shows at least that of a name.
        self.tokens = sorted({_model_word(n) for n in names})
        pids = re.findall(r"^\s*process\s*=\s*(\d+)", text, re.M)
        if not self.gpus or not pids:
            raise SystemExit(f"{path}: no [device] name or no process line (start-procs.sh)")
        self.pid_re = re.compile(r"\b(?:" + "|".join(sorted(set(pids))) + r")\b")

    def full_frame(self, screen: list[str]) -> bool:
        gpu_lines = sum(1 for line in screen if self.gpu_line(line))
        return gpu_lines >= self.gpus and any(self.pid_re.search(line) for line in screen)

    def gpu_line(self, line: str) -> bool:
        """A GPU's line: its model's word, or nvitop's power column (it shows no names at 200)."""
        return any(t in line for t in self.tokens) or NVITOP_POWER.search(line) is not None


def _model_word(name: str) -> str:
    words = [w for w in name.split() if w not in ("NVIDIA", "GeForce", "Tesla")]
    return (words[0] if words else name).split("-")[0]


class Tmux:
    """A private tmux server and one control-mode client that sends it commands."""

    def __init__(self, workdir: Path) -> None:
        self.socket = f"gputui-startup-{os.getpid()}"
        base = ["tmux", "-L", self.socket, "-f", "/dev/null"]
        subprocess.run([*base, "new-session", "-d", "-s", "hold", "sleep 86400"], check=True)
        self.client = subprocess.Popen(
            [*base, "-C", "attach", "-t", "hold"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            bufsize=1,
        )
        self._send("display-message -p ready")
        while "ready" not in self._block():  # attach's own (empty) block comes first
            pass
        self.workdir = workdir

    def command(self, line: str) -> list[str]:
        """The output block of one command (notifications between blocks are skipped)."""
        self._send(line)
        return self._block()

    def _send(self, line: str) -> None:
        assert self.client.stdin is not None
        self.client.stdin.write(line + "\n")
        self.client.stdin.flush()

    def _block(self) -> list[str]:
        assert self.client.stdout is not None
        out: list[str] | None = None
        while True:
            got = self.client.stdout.readline()
            if not got:
                raise RuntimeError("tmux control client ended")
            if got.startswith("%begin"):
                out = []
            elif got.startswith(("%end", "%error")) and out is not None:
                return out
            elif out is not None:
                out.append(got.rstrip("\n"))

    def close(self) -> None:
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], check=False)
        self.client.wait(timeout=5)


def _launcher(tmux: Tmux, v: Variant, env: dict[str, str], cwd: Path) -> Path:
    script = tmux.workdir / f"run-{abs(hash(v.label))}.sh"
    pairs = [f"{k}={val}" for k, val in env.items()]
    script.write_text(f"cd {shlex.quote(str(cwd))}\nexec {shlex.join(['env', *pairs, *v.argv])}\n")
    return script


def _rss_mib(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def _cpu_ms(pid: int) -> float:
    """utime + stime of the process (all its threads) so far, from /proc (clock ticks)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


def _wait_gone(pid: int, timeout_s: float = 5.0) -> None:
    deadline = time.monotonic() + timeout_s
    while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    if Path(f"/proc/{pid}").exists():
        os.kill(pid, 9)


def start(tmux: Tmux, v: Variant, name: str, size: tuple[int, int], env: dict[str, str]) -> int:
    cwd = tmux.workdir / f"cwd-{name}"
    cwd.mkdir(exist_ok=True)
    script = _launcher(tmux, v, env, cwd)
    tmux.command(f"new-session -d -s {name} -x {size[0]} -y {size[1]} 'sh {script}'")
    return int(tmux.command(f"display-message -p -t {name} '#{{pane_pid}}'")[0])


def first_frame(
    tmux: Tmux, v: Variant, name: str, size: tuple[int, int], env: dict[str, str], sc: Scenario
) -> tuple[float, float, float, list[str]]:
    """(ms from asking for the pane to the full frame, VmRSS MiB and CPU ms then, the screen)."""
    t0 = time.perf_counter()
    pid = start(tmux, v, name, size, env)
    try:
        while time.perf_counter() - t0 < FRAME_TIMEOUT_S:
            screen = tmux.command(f"capture-pane -p -t {name}")
            if sc.full_frame(screen):
                ms = (time.perf_counter() - t0) * 1000
                return ms, _rss_mib(pid) or float("nan"), _cpu_ms(pid), screen
            time.sleep(POLL_S)
        raise RuntimeError(
            f"{v.label}: no full frame in {FRAME_TIMEOUT_S:g} s:\n" + "\n".join(screen)
        )
    finally:
        tmux.command(f"kill-session -t {name}")
        _wait_gone(pid)


def settled(
    tmux: Tmux, variants: list[Variant], size: tuple[int, int], envs: list[dict[str, str]], s: float
) -> None:
    """All variants at once; VmRSS of each after `s` seconds."""
    pids = [
        start(tmux, v, f"settle{n}", size, e)
        for n, (v, e) in enumerate(zip(variants, envs, strict=True))
    ]
    time.sleep(s)
    for v, pid in zip(variants, pids, strict=True):
        v.settled_mib = _rss_mib(pid)
    for n, pid in enumerate(pids):
        tmux.command(f"kill-session -t settle{n}")
        _wait_gone(pid)


def _fmt(values: list[float]) -> str:
    return f"{statistics.median(values):7.0f} [{min(values):.0f}-{max(values):.0f}]"


def report(variants: list[Variant], floor: Variant, reps: int, size: str, settle: float) -> None:
    f_ms = statistics.median(floor.frames_ms)
    f_rss = statistics.median(floor.rss_mib)
    f_set = floor.settled_mib
    f_cpu = statistics.median(floor.cpu_ms)
    print(
        f"\nexec -> first frame showing every GPU and a process (tmux {size}, median of {reps}"
        f" [min-max]); VmRSS at that frame and {settle:g} s after start (all at once)"
    )
    print(
        f"{'':32} {'first frame ms':>20} {'x floor':>8} {'CPU ms':>7} {'x floor':>8}"
        f" {'RSS@frame MiB':>14} {'x floor':>8}"
        f" {f'RSS@{settle:g}s MiB':>14} {'x floor':>8}"
    )
    for v in variants:
        ms, rss = statistics.median(v.frames_ms), statistics.median(v.rss_mib)
        cpu = statistics.median(v.cpu_ms)
        s = v.settled_mib
        s_txt = f"{s:14.1f} {s / f_set:8.2f}" if s is not None and f_set else f"{'gone':>14} {'':8}"
        print(
            f"{v.label:32} {_fmt(v.frames_ms):>20} {ms / f_ms:8.2f} {cpu:7.0f} {cpu / f_cpu:8.2f}"
            f" {rss:14.1f} {rss / f_rss:8.2f}"
            f" {s_txt}"
        )
    print(f"aims (issue 22): first frame and resident memory within {AIM:g}x the static floor")
    print("CPU ms: utime+stime of the process (all threads) when the frame was seen (10 ms ticks)")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=7, help="timed rounds (default 7)")
    ap.add_argument("--size", default="200x50", help="tmux pane COLSxROWS (default 200x50)")
    ap.add_argument("--settle", type=float, default=10.0, help="seconds for the second RSS read")
    ap.add_argument("--baseline", help="another gputui source folder (with the gputui package)")
    ap.add_argument("--baseline-label", default="baseline", help="its label in the table")
    ap.add_argument(
        "--nvitop", help="an nvitop executable to run beside (e.g. /tmp/peers/bin/nvitop)"
    )
    ap.add_argument(
        "--show", action="store_true", help="print each variant's first full frame once"
    )
    args = ap.parse_args()
    scenario = os.environ.get("FAKE_NVML_SCENARIO")
    if not scenario or not os.environ.get("LD_LIBRARY_PATH"):
        raise SystemExit("set LD_LIBRARY_PATH and FAKE_NVML_SCENARIO (../shared/fakenvml README)")
    sc = Scenario(Path(scenario))
    cols, rows = (int(x) for x in args.size.split("x"))
    size = (cols, rows)
    py = sys.executable
    gputui_args = ["-m", "gputui", "--source", "nvml", "--interval", "1"]
    trees = [("gputui (this checkout)", ROOT / "src")]
    if args.baseline:
        trees.append((args.baseline_label, Path(args.baseline).resolve()))
    with tempfile.TemporaryDirectory(prefix="gputui-startup-") as tmp:
        work = Path(tmp)
        variants: list[Variant] = []
        for n, (label, src) in enumerate(trees):
            subprocess.run(
                [py, "-m", "compileall", "-q", str(src)], check=True, capture_output=True
            )
            env = {
                "PYTHONPATH": str(src),
                "GPUTUI_CACHE_DIR": str(work / f"cache{n}"),
                "XDG_CONFIG_HOME": str(work / f"config{n}"),
            }
            warm = "from gputui.catalog import load_catalog; load_catalog()"
            subprocess.run([py, "-c", warm], env={**os.environ, **env}, check=True)
            variants.append(Variant(label, [py, *gputui_args], env))
        floor = Variant(
            "textual_floor.py (static)", [py, str(ROOT / "benchmarks" / "textual_floor.py")]
        )
        variants.append(floor)
        if args.nvitop:
            variants.append(Variant("nvitop", [args.nvitop]))
        keep = {k: os.environ[k] for k in ("LD_LIBRARY_PATH", "FAKE_NVML_SCENARIO")}
        tmux = Tmux(work)
        try:
            runs = 0
            for rnd in range(args.reps + 1):
                order = variants[rnd % len(variants) :] + variants[: rnd % len(variants)]
                for v in order:
                    runs += 1
                    ms, rss, cpu, screen = first_frame(
                        tmux, v, f"r{runs}", size, {**keep, **v.env}, sc
                    )
                    if rnd == 0:
                        if args.show:
                            print(f"--- {v.label}: first full frame\n" + "\n".join(screen))
                        continue
                    v.frames_ms.append(ms)
                    v.rss_mib.append(rss)
                    v.cpu_ms.append(cpu)
                print(f"round {rnd}{' (warm-up)' if rnd == 0 else ''} done", file=sys.stderr)
            settled(tmux, variants, size, [{**keep, **v.env} for v in variants], args.settle)
        finally:
            tmux.close()
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}")
    print(f"scenario {scenario}: {sc.gpus} GPUs")
    report(variants, floor, args.reps, args.size, args.settle)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
