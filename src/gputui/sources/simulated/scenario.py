"""Loading and validating simulated-GPU scenario files, into spec.py's records.

Hand-written validation instead of pydantic: `gputui snapshot --demo` loads a
scenario on every run and must not pay pydantic's import. Every problem is one
line naming the file and either the TOML position or the field path
(`demo.toml: gpu[1].memory_total: must be positive`), raised as UserError.
The file format is documented in docs/scenarios.md.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from dataclasses import fields
from pathlib import Path
from random import Random
from typing import Any

from gputui.core.errors import UserError
from gputui.core.textsafe import visible
from gputui.core.tomlsafe import read_toml
from gputui.model.snapshot import COMPUTE_MODES, DeviceSample
from gputui.sources.simulated.gpm import GPM_FIELDS
from gputui.sources.simulated.limits import (
    MAX_CLOCK_MHZ,
    MAX_COMMAND,
    MAX_CPUS,
    MAX_FILE_BYTES,
    MAX_GPUS,
    MAX_MIG,
    MAX_NOTICE,
    MAX_PCIE_GEN,
    MAX_PCIE_WIDTH,
    MAX_PID,
    MAX_PROCESSES,
    MAX_SECONDS,
    MAX_TEXT,
    MAX_TIMESTAMP,
    MAX_WATTS,
    MIN_POWER_LIMIT_W,
    SEED_RANGE,
)
from gputui.sources.simulated.spec import GpuSpec, HostSpec, MigSpec, ProcessSpec, Scenario
from gputui.sources.simulated.toml_fields import Table, brief

WORKLOADS = ("training", "inference", "interactive", "graphics")
PROCESS_TYPES = ("compute", "graphics", "compute+graphics", "mps")

# Short names accepted in `unsupported = [...]`, expanded to DeviceSample field names.
UNSUPPORTED_ALIASES: dict[str, tuple[str, ...]] = {
    "fan": ("fan_pct",),
    "ecc": ("ecc_volatile_uncorrected", "ecc_mode"),
    "power": ("power_w",),
    "power_limit": ("power_limit_w",),
    "temperature": ("temperature_c",),
    "clocks": ("sm_clock_mhz", "mem_clock_mhz"),
    "pcie": ("pcie_rx_kbs", "pcie_tx_kbs"),
    "encoder": ("encoder_util",),
    "decoder": ("decoder_util",),
    "utilization": ("utilization_gpu", "utilization_memory"),
    "gpm": GPM_FIELDS,
    "pstate": ("performance_state",),
    "throttle": ("throttle_reasons",),
    "memory_reserved": ("memory_reserved",),
    "persistence": ("persistence_mode",),
    "display": ("display_active",),
    "pcie_link": ("pcie_gen", "pcie_width", "pcie_max_gen", "pcie_max_width"),
    "bar1": ("bar1_total", "bar1_used"),
    "energy": ("energy_j",),
    "ecc_mode": ("ecc_mode",),
    "power_limits": ("power_default_limit_w", "power_min_limit_w", "power_max_limit_w"),
}
SAMPLE_FIELDS = frozenset(f.name for f in fields(DeviceSample))
# The static facts a scenario may also mark unsupported (N/A), like the sample fields.
INFO_FIELDS = frozenset(
    {
        "ecc_mode",
        "power_default_limit_w",
        "power_min_limit_w",
        "power_max_limit_w",
        "pcie_max_gen",
        "pcie_max_width",
        "bar1_total",
    }
)
# Memory totals are part of the device's identity; a card that cannot report them is not simulated.
_NEVER_UNSUPPORTED = frozenset({"memory_total", "memory_used", "memory_free"})


def load_scenario(path: Path) -> Scenario:
    """Read and validate a scenario file; every failure is a one-line UserError."""
    label = str(path)
    _, data = read_toml(path, label, what="scenario file", max_bytes=MAX_FILE_BYTES)
    return parse_scenario(data, label=label, name=visible(path.name))


def parse_scenario(data: Mapping[str, Any], *, label: str, name: str) -> Scenario:
    top = Table(data, label, "")
    seed = top.integer("seed", default=0, minimum=SEED_RANGE[0], maximum=SEED_RANGE[1])
    rng = Random(seed)
    hostname = top.text("hostname", default="sim-host")
    driver = top.opt_text("driver_version")
    cuda = top.opt_text("cuda_driver_version")
    nvml = top.opt_text("nvml_version")
    start_ts = top.opt_number("start_timestamp", lo=0, hi=MAX_TIMESTAMP)
    notices = tuple(top.text_list("notices", default=[], max_len=MAX_NOTICE))
    host = _parse_host(top.table("host"))
    gpu_tables = top.table_list("gpu", required=True, max_items=MAX_GPUS)
    if not gpu_tables:
        raise UserError(f"{label}: gpu: at least one [[gpu]] table is needed")
    gpus = tuple(_parse_gpu(t, i, rng) for i, t in enumerate(gpu_tables))
    processes: list[ProcessSpec] = []
    seen_pids: dict[tuple[int, int], str] = {}
    for i, t in enumerate(top.table_list("process", required=False, max_items=MAX_PROCESSES)):
        proc = _parse_process(t, i, rng, len(gpus), host.cpu_count)
        if proc.mig is not None and proc.mig >= len(gpus[proc.gpu].mig):
            raise UserError(
                f"{label}: process[{i}].mig: gpu {proc.gpu} has "
                f"{len(gpus[proc.gpu].mig)} MIG devices, no index {proc.mig}"
            )
        key = (proc.gpu, proc.pid)
        if key in seen_pids:
            raise UserError(
                f"{label}: process[{i}].pid: {proc.pid} is already used on gpu {proc.gpu} "
                f"by {seen_pids[key]}"
            )
        seen_pids[key] = f"process[{i}]"
        processes.append(proc)
    top.reject_unknown()
    return Scenario(
        name=name,
        seed=seed,
        hostname=hostname,
        gpus=gpus,
        processes=tuple(processes),
        host=host,
        driver_version=driver,
        cuda_driver_version=cuda,
        nvml_version=nvml,
        start_timestamp=start_ts,
        notices=notices,
    )


# (field, the field of the same table it must not pass, whether the two may be equal,
# how the error says it), checked in this order so the first problem named stays the same.
_Order = tuple[str, str, bool, str]
_HOST_ORDER: tuple[_Order, ...] = (
    ("swap_used", "swap_total", True, "is larger than"),
    ("base_memory_used", "memory_total", True, "is larger than"),
)
_GPU_ORDER: tuple[_Order, ...] = (
    ("power_min_limit_w", "power_max_limit_w", True, "is above"),
    ("pcie_idle_gen", "pcie_max_gen", True, "is above"),
    ("idle_power_w", "power_limit_w", False, "must be below"),
    ("memory_reserved", "memory_total", False, "must be below"),
    ("idle_sm_clock_mhz", "max_sm_clock_mhz", True, "is above"),
    ("idle_mem_clock_mhz", "max_mem_clock_mhz", True, "is above"),
)


def _check_order(t: Table, spec: object, rules: tuple[_Order, ...]) -> None:
    """One loop for every "this field must stay under that one" rule; an unset (None) side
    has nothing to compare."""
    for field, bound, equal_ok, says in rules:
        value, limit = getattr(spec, field), getattr(spec, bound)
        if value is None or limit is None:
            continue
        if value > limit or (value == limit and not equal_ok):
            t.fail(field, f"{says} {bound}")


def _parse_host(t: Table) -> HostSpec:
    d = HostSpec()
    spec = HostSpec(
        cpu_count=t.integer("cpu_count", default=d.cpu_count, minimum=1, maximum=MAX_CPUS),
        memory_total=t.size("memory_total", default=d.memory_total, positive=True),
        swap_total=t.size("swap_total", default=d.swap_total),
        swap_used=t.size("swap_used", default=d.swap_used),
        base_memory_used=t.size("base_memory_used", default=d.base_memory_used),
        base_cpu_percent=t.number("base_cpu_percent", default=d.base_cpu_percent, lo=0, hi=100),
    )
    _check_order(t, spec, _HOST_ORDER)
    t.reject_unknown()
    return spec


def _parse_gpu(t: Table, index: int, rng: Random) -> GpuSpec:
    # Drawn unconditionally so a scenario's identifiers do not shift when a field is added.
    uuid_bits = rng.getrandbits(128)
    name = t.text("name")
    memory_total = t.size("memory_total", positive=True)
    power_limit = t.number("power_limit_w", lo=MIN_POWER_LIMIT_W, hi=MAX_WATTS)
    max_sm = t.integer("max_sm_clock_mhz", minimum=1, maximum=MAX_CLOCK_MHZ)
    max_mem = t.integer("max_mem_clock_mhz", minimum=1, maximum=MAX_CLOCK_MHZ)
    hex_id = f"{uuid_bits:032x}"
    default_uuid = f"GPU-{hex_id[:8]}-{hex_id[8:12]}-{hex_id[12:16]}-{hex_id[16:20]}-{hex_id[20:]}"
    default_reserved = (memory_total // 100) >> 20 << 20  # NVML reserves about 1%
    unsupported: set[str] = set()
    for j, item in enumerate(t.text_list("unsupported", default=[], max_len=MAX_TEXT)):
        names = UNSUPPORTED_ALIASES.get(item, (item,))
        for n in names:
            if n not in SAMPLE_FIELDS and n not in INFO_FIELDS:
                t.fail(f"unsupported[{j}]", f"unknown field {brief(item)}")
            if n in _NEVER_UNSUPPORTED:
                t.fail(f"unsupported[{j}]", f"{brief(item)} cannot be unsupported in a scenario")
            unsupported.add(n)
    spec = GpuSpec(
        name=name,
        memory_total=memory_total,
        power_limit_w=power_limit,
        max_sm_clock_mhz=max_sm,
        max_mem_clock_mhz=max_mem,
        uuid=t.text("uuid", default=default_uuid),
        pci_bus_id=t.text("pci_bus_id", default=f"00000000:{index + 1:02X}:00.0"),
        compute_capability=t.opt_text("compute_capability", pattern=r"[0-9]{1,3}\.[0-9]{1,3}"),
        architecture=t.opt_text("architecture"),
        memory_reserved=t.size("memory_reserved", default=default_reserved),
        idle_power_w=t.number(
            "idle_power_w", default=round(power_limit * 0.08, 1), lo=0, hi=MAX_WATTS, tiny=1e-3
        ),
        idle_sm_clock_mhz=t.integer(
            "idle_sm_clock_mhz", default=min(210, max_sm), minimum=1, maximum=MAX_CLOCK_MHZ
        ),
        idle_mem_clock_mhz=t.integer(
            "idle_mem_clock_mhz", default=min(405, max_mem), minimum=1, maximum=MAX_CLOCK_MHZ
        ),
        temp_idle_c=t.number("temp_idle_c", default=30.0, lo=-20, hi=120),
        temp_at_limit_c=t.number("temp_at_limit_c", default=80.0, lo=-20, hi=120),
        load_pstate=t.integer("load_pstate", default=0, minimum=0, maximum=15),
        mig_mode=t.opt_boolean("mig_mode"),
        unsupported=frozenset(unsupported),
        lost_after_s=t.opt_number("lost_after_s", lo=0, hi=MAX_SECONDS),
        persistence_mode=t.boolean("persistence_mode", default=True),
        display_active=t.boolean("display_active", default=False),
        compute_mode=t.choice("compute_mode", COMPUTE_MODES, default="default"),
        ecc_mode=t.boolean("ecc_mode", default=True),
        power_default_limit_w=t.opt_number(
            "power_default_limit_w", lo=MIN_POWER_LIMIT_W, hi=MAX_WATTS
        ),
        power_min_limit_w=t.opt_number("power_min_limit_w", lo=MIN_POWER_LIMIT_W, hi=MAX_WATTS),
        power_max_limit_w=t.opt_number("power_max_limit_w", lo=MIN_POWER_LIMIT_W, hi=MAX_WATTS),
        pcie_max_gen=t.integer("pcie_max_gen", default=4, minimum=1, maximum=MAX_PCIE_GEN),
        pcie_max_width=t.integer("pcie_max_width", default=16, minimum=1, maximum=MAX_PCIE_WIDTH),
        pcie_idle_gen=t.integer("pcie_idle_gen", default=1, minimum=1, maximum=MAX_PCIE_GEN),
        bar1_total=t.size("bar1_total", default=256 << 20),
        encoder_util=t.integer("encoder_util", default=0, minimum=0, maximum=100),
        decoder_util=t.integer("decoder_util", default=0, minimum=0, maximum=100),
        energy_at_start_j=t.number("energy_at_start_j", default=0.0, lo=0, hi=1e15),
        mig=_parse_migs(t, rng, memory_total),
    )
    if spec.mig and spec.mig_mode is not True:
        t.fail("mig", "MIG devices need mig_mode = true")
    _check_order(t, spec, _GPU_ORDER)
    t.reject_unknown()
    return spec


def _parse_migs(t: Table, rng: Random, parent_memory: int) -> tuple[MigSpec, ...]:
    """`[[gpu.mig]]` tables: one MIG device each, in MIG index order."""
    out: list[MigSpec] = []
    total = 0
    for i, m in enumerate(t.table_list("mig", required=False, max_items=MAX_MIG)):
        bits = rng.getrandbits(128)
        hex_id = f"{bits:032x}"
        profile = m.text("profile")
        if not re.fullmatch(r"[1-8]g\.[0-9]{1,4}gb(\+[a-z]{1,8})?", profile):
            m.fail("profile", f'{brief(profile)} is not a MIG profile like "3g.40gb"')
        memory = m.size("memory_total", positive=True)
        total += memory
        if total > parent_memory:
            m.fail("memory_total", "the MIG devices together exceed the GPU's memory_total")
        spec = MigSpec(
            profile=profile,
            memory_total=memory,
            gpu_instance_id=m.integer("gpu_instance_id", default=i + 1, minimum=0, maximum=64),
            compute_instance_id=m.integer("compute_instance_id", default=0, minimum=0, maximum=64),
            uuid=m.text(
                "uuid",
                default=f"MIG-{hex_id[:8]}-{hex_id[8:12]}-{hex_id[12:16]}-{hex_id[16:20]}-"
                f"{hex_id[20:]}",
            ),
            bar1_total=m.size("bar1_total", default=max(1 << 20, (memory // 32) >> 20 << 20)),
        )
        if any(o.gpu_instance_id == spec.gpu_instance_id for o in out):
            m.fail("gpu_instance_id", f"{spec.gpu_instance_id} is already used on this GPU")
        m.reject_unknown()
        out.append(spec)
    return tuple(out)


def _parse_process(
    t: Table, index: int, rng: Random, gpu_count: int, cpu_count: int
) -> ProcessSpec:
    default_pid = rng.randint(2_000, 3_999_999)
    gpu = t.integer("gpu", minimum=0, maximum=MAX_GPUS)
    if gpu >= gpu_count:
        t.fail("gpu", f"no such GPU (the scenario has {gpu_count}: 0..{gpu_count - 1})")
    host_visible = t.boolean("host_visible", default=True)
    # A process the host cannot see has no known command line; any other needs one.
    command = (
        t.text("command", max_len=MAX_COMMAND, raw=True)
        if host_visible
        else (t.opt_text("command", max_len=MAX_COMMAND, raw=True) or "")
    )
    try:
        cmdline = tuple(visible(arg) for arg in shlex.split(command))
    except ValueError as exc:
        t.fail("command", f"cannot split into arguments ({exc})")
    if host_visible and not cmdline:
        t.fail("command", "must not be empty")
    container = t.opt_text("container")
    spec = ProcessSpec(
        gpu=gpu,
        pid=t.integer("pid", default=default_pid, minimum=1, maximum=MAX_PID),
        user=t.text("user", default="root"),
        cmdline=cmdline,
        type=t.choice("type", PROCESS_TYPES, default="compute"),
        workload=t.choice("workload", WORKLOADS, default="training"),
        start_s=t.number("start_s", default=0.0, lo=-MAX_SECONDS, hi=MAX_SECONDS),
        end_s=t.opt_number("end_s", lo=-MAX_SECONDS, hi=MAX_SECONDS),
        gpu_memory=t.size("gpu_memory", default=1 << 30, positive=True),
        util=t.number("util", default=90.0, lo=0, hi=100),
        cpu_percent=t.number("cpu_percent", default=100.0, lo=0, hi=100.0 * MAX_CPUS),
        rss=t.size("rss", default=2 << 30),
        container=_short_container(container),
        container_pid=t.opt_integer("container_pid", minimum=1, maximum=MAX_PID),
        host_visible=host_visible,
        mig=t.opt_integer("mig", minimum=0, maximum=MAX_MIG - 1),
        warmup_s=t.duration("warmup_s", default=30.0),
        memory_ramp_s=t.duration("memory_ramp_s", default=60.0),
        eval_every_s=t.duration("eval_every_s", default=240.0, positive=True),
        eval_s=t.duration("eval_s", default=20.0),
        checkpoint_every_s=t.duration("checkpoint_every_s", default=600.0, positive=True),
        checkpoint_s=t.duration("checkpoint_s", default=12.0),
        sm_share=t.opt_number("sm_share", lo=0, hi=1),
    )
    if spec.cpu_percent > 100.0 * cpu_count:
        t.fail("cpu_percent", f"is more than host.cpu_count ({cpu_count}) cores can give")
    if spec.end_s is not None and spec.end_s <= spec.start_s:
        t.fail("end_s", "must be after start_s")
    if spec.eval_s >= spec.eval_every_s:
        t.fail("eval_s", "must be shorter than eval_every_s")
    if spec.checkpoint_s >= spec.checkpoint_every_s:
        t.fail("checkpoint_s", "must be shorter than checkpoint_every_s")
    if spec.container_pid is not None and spec.container is None:
        t.fail("container_pid", "needs a container")
    t.reject_unknown()
    return spec


def _short_container(label: str | None) -> str | None:
    """Full runtime ids are shown as 12 characters, like `docker ps`; other labels as written."""
    if label and re.fullmatch(r"[0-9a-f]{13,64}", label):
        return label[:12]
    return label
