"""Device facts and MIG devices of the simulated source: scenario keys, N/A, energy, errors."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from gputui.core.errors import UserError
from gputui.core.resources import scenarios_dir
from gputui.render.snapshot_text import render
from gputui.sources.simulated.gpu import ENERGY_HORIZON_S
from gputui.sources.simulated.scenario import load_scenario
from gputui.sources.simulated.source import SimulatedSource

Write = Callable[[str, str], Path]
MiB = 1 << 20

GPU = """
[[gpu]]
name = "NVIDIA A100-SXM4-80GB"
memory_total = "81920 MiB"
power_limit_w = 400
idle_power_w = 50
max_sm_clock_mhz = 1410
max_mem_clock_mhz = 1593
"""


def _src(path: Path) -> SimulatedSource:
    return SimulatedSource(load_scenario(path), clock=lambda: 0.0, with_host=False)


def _error(write: Write, text: str) -> str:
    path = write(text, "s.toml")
    with pytest.raises(UserError) as exc:
        load_scenario(path)
    return str(exc.value)


def test_facts_come_from_the_scenario(write_scenario: Write) -> None:
    text = GPU + (
        'persistence_mode = false\ndisplay_active = true\ncompute_mode = "exclusive_process"\n'
        "ecc_mode = false\npower_default_limit_w = 400\npower_min_limit_w = 150\n"
        'power_max_limit_w = 450\npcie_max_gen = 5\npcie_max_width = 8\nbar1_total = "128 GiB"\n'
        "encoder_util = 30\ndecoder_util = 60\n"
        '[[process]]\ngpu = 0\ncommand = "x"\nutil = 80\n'
    )
    snap = _src(write_scenario(text, "f.toml")).snapshot_at(100.0)
    dev = snap.devices[0]
    info, s = dev.info, dev.sample
    assert s is not None
    assert info.ecc_mode is False
    assert (info.power_default_limit_w, info.power_min_limit_w, info.power_max_limit_w) == (
        400.0,
        150.0,
        450.0,
    )
    assert (info.pcie_max_gen, info.pcie_max_width, info.bar1_total) == (5, 8, 128 << 30)
    assert s.persistence_mode is False and s.display_active is True
    assert s.compute_mode == "exclusive_process"
    assert (s.pcie_gen, s.pcie_width) == (5, 8)  # busy: the full link
    assert (s.encoder_util, s.decoder_util) == (30, 60)
    assert s.ecc_volatile_uncorrected is None  # ECC off: no error counter
    assert s.bar1_used is not None and 0 < s.bar1_used <= 128 << 30


def test_an_idle_link_drops_its_generation(write_scenario: Write) -> None:
    s = _src(write_scenario(GPU + "pcie_idle_gen = 2\n", "i.toml")).snapshot_at(50.0).devices[0]
    assert s.sample is not None and s.sample.pcie_gen == 2 and s.sample.encoder_util == 0


def test_unsupported_facts_are_none_and_listed(write_scenario: Write) -> None:
    text = GPU + 'unsupported = ["persistence", "pcie_link", "bar1", "energy", "power_limits", "ecc"]\n'
    dev = _src(write_scenario(text, "u.toml")).snapshot_at(10.0).devices[0]
    info, s = dev.info, dev.sample
    assert s is not None
    assert None is info.pcie_max_gen is info.pcie_max_width is info.bar1_total is info.ecc_mode
    assert None is info.power_default_limit_w is info.power_min_limit_w is info.power_max_limit_w
    assert None is s.persistence_mode is s.pcie_gen is s.pcie_width is s.bar1_used is s.energy_j
    assert {"persistence_mode", "pcie_gen", "bar1_used", "energy_j", "ecc_mode"} <= dev.unsupported
    assert s.display_active is False  # not listed: still reported


def test_energy_is_the_integral_of_power(write_scenario: Write) -> None:
    text = GPU + 'energy_at_start_j = 1000\n[[process]]\ngpu = 0\ncommand = "x"\nwarmup_s = 0\n'
    src = _src(write_scenario(text, "e.toml"))
    e = [src.snapshot_at(t).devices[0].sample.energy_j for t in (0.0, 600.0, 1200.0, 1230.0)]  # type: ignore[union-attr]
    assert e[0] == 1000.0
    assert all(b is not None and a is not None and b >= a for a, b in zip(e, e[1:], strict=False))
    # a training job near the 400 W cap for 10 minutes: between idle (50 W) and the cap
    assert e[1] is not None and 50 * 600 < e[1] - 1000 <= 400 * 600
    assert e[3] is not None and e[2] is not None and 0 < e[3] - e[2] <= 400 * 30


def test_energy_ignores_poll_history(write_scenario: Write) -> None:
    path = write_scenario(GPU + '[[process]]\ngpu = 0\ncommand = "x"\n', "d.toml")
    fresh = _src(path).snapshot_at(7300.0).devices[0].sample
    busy = _src(path)
    for t in (9000.0, 100.0, 3600.0):
        busy.snapshot_at(t)
    assert busy.snapshot_at(7300.0).devices[0].sample == fresh


def test_energy_is_na_past_the_horizon(write_scenario: Write) -> None:
    s = _src(write_scenario(GPU, "h.toml")).snapshot_at(ENERGY_HORIZON_S + 1).devices[0].sample
    assert s is not None and s.energy_j is None and s.power_w is not None


# --- MIG ---------------------------------------------------------------------------------


def test_mig_scenario_devices_and_processes() -> None:
    src = SimulatedSource.from_scenario(scenarios_dir() / "mig.toml", clock=lambda: 0.0)
    snap = src.snapshot_at(120.0)
    a100, rtx = snap.devices
    assert [m.profile for m in a100.mig_devices] == ["3g.40gb", "2g.20gb", "1g.10gb"]
    assert [m.gpu_instance_id for m in a100.mig_devices] == [1, 2, 3]
    assert all(m.uuid and m.uuid.startswith("MIG-") for m in a100.mig_devices)
    assert rtx.mig_devices == ()
    # NVML gives no utilization in MIG mode: N/A on the parent, the MIG devices and processes
    assert a100.sample is not None and a100.sample.utilization_gpu is None
    assert "utilization_gpu" in a100.unsupported
    assert all(m.utilization_gpu is None for m in a100.mig_devices)
    procs = {p.pid: p for p in snap.processes}
    assert procs[41001].gpu_instance_id == 1 and procs[41003].gpu_instance_id == 2
    assert procs[41001].sm_util is None
    assert procs[41010].gpu_instance_id is None and procs[41010].sm_util is not None
    # each MIG device's memory is the sum of its processes'; the parent's is the sum of all
    for m in a100.mig_devices:
        mine = [p.gpu_memory or 0 for p in snap.processes if p.gpu_instance_id == m.gpu_instance_id]
        assert m.memory_used == sum(mine)
        assert m.memory_free == (m.memory_total or 0) - sum(mine)
    in_migs = sum(m.memory_used or 0 for m in a100.mig_devices)
    assert a100.sample.memory_used is not None
    assert abs(a100.sample.memory_used - in_migs) < 4 * MiB  # each rounded to whole MiB


def test_snapshot_text_lists_mig_devices_with_their_processes() -> None:
    src = SimulatedSource.from_scenario(scenarios_dir() / "mig.toml", clock=lambda: 0.0)
    lines = render(src.snapshot_at(60.0)).splitlines()
    mig = [i for i, line in enumerate(lines) if line.startswith("  MIG ")]
    assert len(mig) == 3
    assert "3g.40gb" in lines[mig[0]] and "GI 1/CI 0" in lines[mig[0]]
    # the processes of each GPU instance sit under it, indented further
    under_first = lines[mig[0] + 1 : mig[1]]
    assert [line.split()[0] for line in under_first] == ["41001", "41002"]
    assert lines[mig[1] + 1].split()[0] == "41003"
    assert "util N/A" in lines[mig[0]]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ('[[gpu.mig]]\nprofile = "3g.40gb"\nmemory_total = "40 GiB"\n', "MIG devices need mig_mode"),
        ('mig_mode = true\n[[gpu.mig]]\nprofile = "3g"\nmemory_total = "40 GiB"\n',
         "gpu[0].mig[0].profile: '3g' is not a MIG profile"),
        ('mig_mode = true\n[[gpu.mig]]\nprofile = "7g.80gb"\nmemory_total = "90 GiB"\n',
         "gpu[0].mig[0].memory_total: the MIG devices together exceed"),
        ('mig_mode = true\n[[gpu.mig]]\nprofile = "1g.10gb"\nmemory_total = "9 GiB"\n'
         '[[gpu.mig]]\nprofile = "1g.10gb"\nmemory_total = "9 GiB"\ngpu_instance_id = 1\n',
         "gpu[0].mig[1].gpu_instance_id: 1 is already used"),
        ('mig_mode = true\n[[gpu.mig]]\nprofile = "1g.10gb"\nmemory_total = "9 GiB"\nsize = 1\n',
         "gpu[0].mig[0].size: unknown field"),
        ('compute_mode = "shared"\n', "gpu[0].compute_mode: 'shared' is not one of"),
        ("pcie_max_gen = 2\npcie_idle_gen = 3\n", "gpu[0].pcie_idle_gen: is above pcie_max_gen"),
        ("power_min_limit_w = 300\npower_max_limit_w = 200\n", "is above power_max_limit_w"),
        ('[[process]]\ngpu = 0\ncommand = "x"\nmig = 0\n', "process[0].mig: gpu 0 has 0 MIG devices"),
    ],
)
def test_bad_mig_and_fact_keys_are_one_line(write_scenario: Write, extra: str, message: str) -> None:
    got = _error(write_scenario, GPU + extra)
    assert message in got and "\n" not in got
