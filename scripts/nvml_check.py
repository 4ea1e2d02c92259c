#!/usr/bin/env python3
"""Compare `gputui snapshot --json` with what the fake NVML library was told to report.

Run by scripts/nvml-check.sh, which builds the fake library (current, legacy
and "v1-only" builds), starts the worker processes and passes the paths here.
For each build x scenario, the snapshot is taken with FAKE_NVML_TIME frozen,
so every value is exactly computable from the scenario file with the fake's
own Python model (shared/fakenvml/tests/scenario_model.py) and, for the
device facts the model does not cover (power limits, PCIe link, BAR1, ECC,
persistence, display and compute modes, energy), the fake's documented
defaults (its README's device keys; `dev_finish` in fakenvml.c). The text
table of `gputui snapshot`, which asks NVML only for what it prints, is
compared with the same table rendered from a full poll. Prints one line per
mismatch and exits 1 if there was any.

    nvml_check.py --fakenvml DIR --lib NAME=DIR... --scenario NAME=CONF... [--gputui CMD]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

T_FROZEN = 1_800_000_000.25
ROOT = Path(__file__).resolve().parent.parent
ARCH = {2: "kepler", 3: "maxwell", 4: "pascal", 5: "volta", 6: "turing", 7: "ampere"}
ARCH.update({8: "ada", 9: "hopper", 10: "blackwell"})
REASONS = ((0x1, "idle"), (0x4, "sw_power_cap"))
TYPES = {"C": "compute", "G": "graphics", "M": "mps"}
YES = {"1", "true", "yes", "on", "enabled", "enable"}

# scenario `unsupported` feature -> JSON fields ("info.x" / "sample.x") that must be null
FEATURE_FIELDS = {
    "memory": ("info.memory_total", "sample.memory_used", "sample.memory_free")
    + ("sample.memory_total", "sample.memory_reserved"),
    "utilization": ("sample.utilization_gpu", "sample.utilization_memory"),
    "temperature": ("sample.temperature_c",),
    "fan": ("sample.fan_pct",),
    "power": ("sample.power_w",),
    "power_limit": ("info.power_limit_w", "sample.power_limit_w"),
    "clocks": ("sample.sm_clock_mhz", "sample.mem_clock_mhz"),
    "max_clocks": ("info.max_sm_clock_mhz", "info.max_mem_clock_mhz"),
    "performance_state": ("sample.performance_state",),
    "compute_capability": ("info.compute_capability",),
    "architecture": ("info.architecture",),
    "mig": ("info.mig_mode",),
    "pcie_throughput": ("sample.pcie_rx_kbs", "sample.pcie_tx_kbs"),
    "encoder": ("sample.encoder_util",),
    "decoder": ("sample.decoder_util",),
    "ecc": ("sample.ecc_volatile_uncorrected",),
    "clocks_event_reasons": ("sample.throttle_reasons",),
    "uuid": ("info.uuid",),
    "pci": ("info.pci_bus_id",),
    "pcie_link": ("info.pcie_max_gen", "info.pcie_max_width", "sample.pcie_gen")
    + ("sample.pcie_width",),
    "bar1": ("info.bar1_total", "sample.bar1_used"),
    "persistence_mode": ("sample.persistence_mode",),
    "display": ("sample.display_active",),
    "compute_mode": ("sample.compute_mode",),
    "energy": ("sample.energy_j",),
}
# Features whose fields join an existing entry above (one NVML query answers both).
FEATURE_FIELDS["power_limit"] += (
    "info.power_default_limit_w",
    "info.power_min_limit_w",
    "info.power_max_limit_w",
)
FEATURE_FIELDS["ecc"] += ("info.ecc_mode",)
COMPUTE_MODES = ("default", "exclusive_thread", "prohibited", "exclusive_process")
MiB = 1 << 20


def _flag(d: Any, key: str, default: bool) -> bool:
    value = d.kv.get(key)
    return default if value is None else value.strip().lower() in YES


def _mw(d: Any, key: str, default_mw: int) -> int:
    """A watts key as the fake stores it (whole mW), else its default."""
    return int(float(d.kv[key]) * 1000) if key in d.kv else default_mw


def _size(d: Any, key: str, default: int) -> int:
    from scenario_model import parse_size  # the fake's own size parser

    return int(parse_size(d.kv[key])) if key in d.kv else default


def device_facts(d: Any, t: float) -> tuple[dict[str, Any], dict[str, Any]]:
    """(info, sample) values of the device facts, from the keys and the fake's defaults."""
    limit = d.power_limit_mw
    gen, width = int(d.kv.get("pcie_gen", "4")), int(d.kv.get("pcie_width", "16"))
    bar1_total = _size(d, "bar1_total", 256 * MiB)
    mode = d.kv.get("compute_mode", "default").strip().lower()
    lo, hi = d.rng("power_w", 30)
    energy_mj = int((lo + hi) / 2.0 * (t - 1.6e9) * 1000.0)  # mean power x time since the epoch
    info = {
        "power_default_limit_w": _mw(d, "power_default_limit_w", limit) / 1000,
        "power_min_limit_w": _mw(d, "power_min_limit_w", limit // 2) / 1000,
        "power_max_limit_w": _mw(d, "power_max_limit_w", limit) / 1000,
        "pcie_max_gen": int(d.kv.get("pcie_max_gen", gen)),
        "pcie_max_width": int(d.kv.get("pcie_max_width", width)),
        "bar1_total": bar1_total,
        "ecc_mode": _flag(d, "ecc_mode", True),
    }
    sample = {
        "persistence_mode": _flag(d, "persistence_mode", True),
        "display_active": _flag(d, "display_active", False),
        "compute_mode": COMPUTE_MODES[int(mode)] if mode.isdigit() else mode,
        "pcie_gen": gen,
        "pcie_width": width,
        "bar1_used": bar1_total if bar1_total < 8 * MiB else 5 * MiB,
        "energy_j": energy_mj / 1000.0,
    }
    return info, sample


def expected_devices(sc: Any, t: float, legacy_memory: bool) -> list[dict[str, Any]]:
    out = []
    for d in sc.devices:
        if d.lost in ("true", "handle", "1", "yes", "on") or (
            "lost_after_s" in d.kv and float(d.kv["lost_after_s"]) == 0
        ):
            out.append({"failed": "lost"})
            continue
        cc = d.cc
        arch = d.kv.get("architecture")
        cc_n = cc[0] * 10 + cc[1]
        arch_n = (
            10
            if cc_n >= 100
            else 9
            if cc_n >= 90
            else 8
            if cc_n >= 89
            else 7
            if cc_n >= 80
            else 6
            if cc_n >= 75
            else 5
            if cc_n >= 70
            else 4
            if cc_n >= 60
            else 3
            if cc_n >= 50
            else 2
        )
        clk_max_sm = _clock_max(d, "sm")
        used = sc.memory_used(d, t)
        total, reserved = d.memory_total, d.memory_reserved
        limit_mw = d.power_limit_mw
        power_mw = sc.power_mw(d, t)
        util = sc.util_gpu(d, t)
        mask = (0x1 if util == 0 else 0) | (0x4 if power_mw * 100 >= limit_mw * 98 else 0)
        if "clocks_event_reasons" in d.kv and d.kv["clocks_event_reasons"] != "auto":
            mask = int(d.kv["clocks_event_reasons"], 0)
        names = () if mask in (0, 1) else tuple(n for b, n in REASONS if mask & b)
        info: dict[str, Any] = {
            "index": d.index,
            "name": d.name,
            "pci_bus_id": d.bus_id,
            "memory_total": total,
            "compute_capability": f"{cc[0]}.{cc[1]}",
            "architecture": arch if arch and not arch.isdigit() else ARCH.get(arch_n),
            "power_limit_w": limit_mw / 1000,
            "max_sm_clock_mhz": clk_max_sm,
            "max_mem_clock_mhz": _clock_max(d, "mem"),
            "mig_mode": d.kv.get("mig_mode", "disabled").lower() in YES,
        }
        if d.uuid:
            info["uuid"] = d.uuid
        sample: dict[str, Any] = {
            "utilization_gpu": util,
            "utilization_memory": sc.util_mem(d, t),
            "memory_total": total,
            "memory_used": used + reserved if legacy_memory else used,
            "memory_free": total - used - reserved,
            "memory_reserved": None if legacy_memory else reserved,
            "temperature_c": sc.temperature(d, t),
            "fan_pct": None if d.kv.get("num_fans") == "0" else sc.fan(d, t),
            "power_w": power_mw / 1000,
            "power_limit_w": limit_mw / 1000,
            "sm_clock_mhz": sc.clock(d, 1, t),
            "mem_clock_mhz": sc.clock(d, 2, t),
            "performance_state": sc.pstate(d, t),
            "pcie_rx_kbs": sc.rvu(d, d.rng("pcie_rx_kbs", 0), t),
            "pcie_tx_kbs": sc.rvu(d, d.rng("pcie_tx_kbs", 0), t),
            "encoder_util": sc.util_enc(d, t),
            "decoder_util": sc.util_dec(d, t),
            "throttle_reasons": list(names),
            "ecc_volatile_uncorrected": int(d.kv.get("ecc_uncorrected", "0"))
            if d.kv.get("ecc_mode", "on").lower() in YES
            else None,
        }
        facts_info, facts_sample = device_facts(d, t)
        info.update(facts_info)
        sample.update(facts_sample)
        dev = {"info": info, "sample": sample, "failed": None}
        for feature in d.unsupported:
            for path in FEATURE_FIELDS.get(feature, ()):
                part, key = path.split(".")
                dev[part][key] = None
        if "name" in d.unsupported:
            info["name"] = "Unknown GPU"
        out.append(dev)
    return out


def _clock_max(d: Any, which: str) -> int:
    """The fake's max clock: the explicit key, else the top of the clock's range."""
    if which == "mem":
        if "max_clock_mem_mhz" in d.kv:
            return int(d.kv["max_clock_mem_mhz"])
        return int(max(d.rng("clock_mem_mhz", 1215)) + 0.5)
    graphics = (
        int(d.kv["max_clock_graphics_mhz"])
        if "max_clock_graphics_mhz" in d.kv
        else int(max(d.rng("clock_graphics_mhz", 1410)) + 0.5)
    )
    if "max_clock_sm_mhz" in d.kv:
        return int(d.kv["max_clock_sm_mhz"])
    sm_key = "clock_sm_mhz" if "clock_sm_mhz" in d.kv else "clock_graphics_mhz"
    sm = int(max(d.rng(sm_key, 1410)) + 0.5)
    return max(sm, graphics)


def expected_processes(sc: Any, t: float) -> list[dict[str, Any]]:
    out = []
    for d in sc.devices:
        if d.lost in ("true", "handle") or "processes" in d.unsupported:
            continue
        for p in d.procs:
            sm, mem = sc.proc_util(d, p, t)
            if "process_utilization" in d.unsupported:
                sm = mem = None
            kinds = [TYPES[k] for k in "CGM" if k in p.types]
            out.append(
                {
                    "gpu_index": d.index,
                    "pid": p.pid,
                    "type": "+".join(kinds),
                    "gpu_memory": p.mem,
                    "sm_util": sm,
                    "mem_util": mem,
                }
            )
    return sorted(out, key=lambda r: (r["gpu_index"], r["pid"]))


def compare(label: str, got: dict[str, Any], sc: Any, legacy_memory: bool) -> list[str]:
    diffs: list[str] = []

    def diff(where: str, have: Any, want: Any) -> None:
        if isinstance(want, float) and isinstance(have, (int, float)) and abs(have - want) < 1e-6:
            return
        if have != want:
            diffs.append(f"{label}: {where}: got {have!r}, want {want!r}")

    diff("source", got.get("source"), "nvml")
    diff("driver_version", got.get("driver_version"), sc.globals["driver_version"])
    cuda = sc.cuda
    diff(
        "cuda_driver_version", got.get("cuda_driver_version"), f"{cuda // 1000}.{cuda % 1000 // 10}"
    )
    diff("nvml_version", got.get("nvml_version"), sc.globals["nvml_version"])
    want_devs = expected_devices(sc, T_FROZEN, legacy_memory)
    devs = got.get("devices", [])
    diff("device count", len(devs), len(want_devs))
    for i, (have, want) in enumerate(zip(devs, want_devs, strict=False)):
        if want["failed"] == "lost":
            failed = have.get("failed") or ""
            if "lost" not in failed:
                diffs.append(f"{label}: GPU {i}: failed: got {failed!r}, want a 'lost' reason")
            diff(f"GPU {i} sample", have.get("sample"), None)
            continue
        diff(f"GPU {i} failed", have.get("failed"), None)
        for part in ("info", "sample"):
            section = have.get(part) or {}
            for key, value in want[part].items():
                diff(f"GPU {i} {part}.{key}", section.get(key, "<missing>"), value)
        if "uuid" not in want["info"]:  # derived by the fake from the name: check the form
            uuid = (have.get("info") or {}).get("uuid") or ""
            if not uuid.startswith("GPU-"):
                diffs.append(f"{label}: GPU {i} info.uuid: got {uuid!r}, want a GPU-... uuid")
        for feature in sc.devices[i].unsupported:
            for path in FEATURE_FIELDS.get(feature, ()):
                if path.split(".")[1] not in have.get("unsupported", []) and not path.startswith(
                    "info.power_limit"
                ):
                    diffs.append(f"{label}: GPU {i}: {path} not listed as unsupported")
    procs = sorted(
        (
            {k: p.get(k) for k in ("gpu_index", "pid", "type", "gpu_memory", "sm_util", "mem_util")}
            for p in got.get("processes", [])
        ),
        key=lambda r: (r["gpu_index"], r["pid"]),
    )
    want_procs = expected_processes(sc, T_FROZEN)
    have_keys = {(p["gpu_index"], p["pid"]): p for p in procs}
    want_keys = {(p["gpu_index"], p["pid"]): p for p in want_procs}
    for k in sorted(want_keys.keys() - have_keys.keys()):
        diffs.append(f"{label}: process GPU {k[0]} PID {k[1]} missing")
    for k in sorted(have_keys.keys() - want_keys.keys()):
        diffs.append(f"{label}: unexpected process GPU {k[0]} PID {k[1]}: {have_keys[k]}")
    for k in sorted(want_keys.keys() & have_keys.keys()):
        for field, value in want_keys[k].items():
            diff(f"process GPU {k[0]} PID {k[1]} {field}", have_keys[k][field], value)
    for p in got.get("processes", []):
        cmdline = p.get("cmdline")
        if cmdline is not None and not any("fake_worker.py" in a for a in cmdline):
            diffs.append(f"{label}: PID {p.get('pid')} cmdline {cmdline!r} is not a fake worker")
    return diffs


def snapshot(cmd: list[str], lib: str, conf: str, frozen: bool = True) -> dict[str, Any]:
    result: dict[str, Any] = json.loads(run_text(cmd, lib, conf, frozen))
    return result


def run_text(cmd: list[str], lib: str, conf: str, frozen: bool = True) -> str:
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = lib
    env["FAKE_NVML_SCENARIO"] = conf
    env.pop("FAKE_NVML_STATS", None)
    env.pop("FAKE_NVML_CALL_COST_US", None)
    if frozen:
        env["FAKE_NVML_TIME"] = repr(T_FROZEN)
    else:
        env.pop("FAKE_NVML_TIME", None)
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    if r.returncode not in (0, 3):  # 3: a GPU is lost (the faults scenario has one)
        raise RuntimeError(f"{shlex.join(cmd)} exited {r.returncode}: {r.stderr.strip()[-2000:]}")
    return r.stdout


# A process's running time (`0:41`, `1:02:03`, `2d03h`) ticks between two runs.
_DURATION = re.compile(r"(?<=  )(\d+d\d\dh|\d+:\d\d(?::\d\d)?)(?=  )")


def _table_lines(text: str) -> list[str]:
    """The table without its first two lines (clock; host load and memory) or running times."""
    return [_DURATION.sub("T", line) for line in text.splitlines()[2:]]


def table_check(label: str, cmd: list[str], lib: str, conf: str) -> list[str]:
    """`gputui snapshot` (the text table: NVML asked only for what it prints, host from
    /proc) against the table rendered from a full poll with psutil's host sampler."""
    full = [sys.executable, str(ROOT / "scripts" / "nvml_snapshot.py"), "--text"]
    try:
        have = _table_lines(run_text(cmd, lib, conf))
        want = _table_lines(run_text(full, lib, conf))
    except RuntimeError as exc:
        return [f"{label} table: {exc}"]
    diffs = [
        f"{label} table line {i + 3}: got {a!r}, want {b!r}"
        for i, (a, b) in enumerate(zip(have, want, strict=False))
        if a != b
    ]
    if len(have) != len(want):
        diffs.append(f"{label} table: {len(have)} lines, want {len(want)}")
    if not any(line.startswith("[0] ") for line in have):
        diffs.append(f"{label} table: no GPU line in {have[:3]!r}")
    return diffs


def pick_command(explicit: str | None, lib: str, conf: str) -> list[str]:
    """`gputui snapshot --json` when it works; else the in-repo driver (until the command lands)."""
    if explicit:
        return shlex.split(explicit)
    gputui = [str(Path(sys.executable).parent / "gputui"), "snapshot", "--json"]
    try:
        snapshot(gputui, lib, conf)
        return gputui
    except (RuntimeError, json.JSONDecodeError, FileNotFoundError) as exc:
        print(f"note: `gputui snapshot --json` unusable ({exc}); using the in-repo driver")
        return [sys.executable, str(ROOT / "scripts" / "nvml_snapshot.py")]


def lost_after_check(lib: str, conf: str, sc: Any) -> list[str]:
    """A GPU that falls off the bus while we poll (real clock): it fails, the others go on."""
    idx = [d.index for d in sc.devices if "lost_after_s" in d.kv]
    if not idx:
        return []
    wait = max(float(sc.devices[i].kv["lost_after_s"]) for i in idx) + 0.3
    driver = [
        sys.executable,
        str(ROOT / "scripts" / "nvml_snapshot.py"),
        "--polls",
        "2",
        "--interval",
        str(wait),
    ]
    got = snapshot(driver, lib, conf, frozen=False)
    diffs = []
    for i, dev in enumerate(got["devices"]):
        if i in idx:
            if "lost" not in (dev.get("failed") or ""):
                diffs.append(f"lost_after: GPU {i} failed={dev.get('failed')!r}, want lost")
            if dev["info"]["name"] != sc.devices[i].name:
                diffs.append(f"lost_after: GPU {i} lost its static info: {dev['info']}")
        elif (
            sc.devices[i].lost == "false"
            and not sc.devices[i].unsupported
            and (dev.get("failed") or not dev.get("sample"))
        ):
            diffs.append(f"lost_after: healthy GPU {i} stopped updating: {dev.get('failed')}")
    return diffs


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fakenvml", required=True, type=Path)
    ap.add_argument("--lib", action="append", required=True, help="NAME=DIR (legacy* = old driver)")
    ap.add_argument("--scenario", action="append", required=True, help="NAME=CONF")
    ap.add_argument("--gputui", help="snapshot command (default: gputui snapshot --json)")
    args = ap.parse_args()
    sys.path.insert(0, str(args.fakenvml / "tests"))
    from scenario_model import Scenario  # the fake library's own model of its values

    libs = [tuple(x.split("=", 1)) for x in args.lib]
    scenarios = [tuple(x.split("=", 1)) for x in args.scenario]
    cmd = pick_command(args.gputui, libs[0][1], scenarios[0][1])
    print(f"snapshot command: {shlex.join(cmd)}")
    failures: list[str] = []
    checks = 0
    for lib_name, lib in libs:
        legacy = bool(re.match(r"legacy|v1", lib_name))
        for sc_name, conf in scenarios:
            sc = Scenario(conf)
            label = f"{lib_name}/{sc_name}"
            t0 = time.perf_counter()
            try:
                got = snapshot(cmd, lib, conf)
            except (RuntimeError, json.JSONDecodeError) as exc:
                failures.append(f"{label}: {exc}")
                continue
            diffs = compare(label, got, sc, legacy_memory=legacy)
            checks += 1
            ms = (time.perf_counter() - t0) * 1000
            n_dev, n_proc = len(got.get("devices", [])), len(got.get("processes", []))
            if cmd[-1] == "--json":  # the real command: its text table too
                diffs += table_check(label, cmd[:-1], lib, conf)
            status = "ok" if not diffs else f"{len(diffs)} mismatches"
            print(f"  {label:<22} {n_dev} GPUs, {n_proc} processes, {ms:5.0f} ms: {status}")
            failures.extend(diffs)
    for sc_name, conf in scenarios:
        sc = Scenario(conf)
        if any("lost_after_s" in d.kv for d in sc.devices):
            diffs = lost_after_check(libs[0][1], conf, sc)
            print(f"  lost-after-init/{sc_name}: {'ok' if not diffs else 'FAILED'}")
            failures.extend(diffs)
    for line in failures:
        print("MISMATCH " + line)
    print(f"nvml-check: {checks} snapshots compared, {len(failures)} mismatches")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
