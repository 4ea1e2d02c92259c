"""The alert engine over hand-built snapshots: each default rule, hysteresis, muting.

Time is the snapshots' own timestamps (the engine has no clock), so a test steps it.
"""

from __future__ import annotations

from typing import Any

import pytest

from gputui.alerts.engine import AlertEngine
from gputui.alerts.rules import Rule, default_rules
from gputui.model.alert import AlertChange
from gputui.model.record import replace
from gputui.model.snapshot import (
    DeviceInfo,
    DeviceSample,
    DeviceSnapshot,
    GpuEvent,
    GpuProcess,
    Snapshot,
)

GiB = 1 << 30
T0 = 1_800_000_000.0


def _sample(**kw: Any) -> DeviceSample:
    base: dict[str, Any] = dict(
        memory_used=10 * GiB, memory_total=80 * GiB, utilization_gpu=50, temperature_c=60,
        throttle_reasons=(), ecc_volatile_uncorrected=0,
    )  # fmt: skip
    return DeviceSample(**(base | kw))


def _snap(t: float, *samples: DeviceSample | None, **kw: Any) -> Snapshot:
    devices = tuple(
        DeviceSnapshot(DeviceInfo(i, "GPU"), s, failed=None if s is not None else "GPU is lost")
        for i, s in enumerate(samples or (_sample(),))
    )
    return Snapshot(T0 + t, "nvml", devices, **kw)


def _rules(**changes: dict[str, Any]) -> tuple[Rule, ...]:
    return tuple(replace(r, **changes.get(r.name, {})) for r in default_rules())


def _run(engine: AlertEngine, snaps: list[Snapshot]) -> list[tuple[float, str, str, str | None]]:
    out = []
    for s in snaps:
        out += [(c.timestamp - T0, c.rule, c.state, c.gpu) for c in engine.update(s)]
    return out


def test_memory_high_fires_once_after_its_hold_and_clears_after_its_clear_time() -> None:
    full, ok = _sample(memory_used=78 * GiB), _sample()
    snaps = [_snap(t, full) for t in (0, 10, 29, 30, 45, 60)] + [
        _snap(t, ok) for t in (61, 80, 90, 91)
    ]
    assert _run(AlertEngine(default_rules()), snaps) == [
        (30, "memory_high", "firing", "0"),
        (91, "memory_high", "cleared", "0"),
    ]


def test_a_condition_back_before_its_clear_time_does_not_fire_again() -> None:
    full, ok = _sample(memory_used=78 * GiB), _sample()
    snaps = [_snap(0, full), _snap(30, full), _snap(40, ok), _snap(50, full), _snap(100, ok)]
    snaps.append(_snap(130, ok))
    changes = _run(AlertEngine(default_rules()), snaps)
    assert changes == [(30, "memory_high", "firing", "0"), (130, "memory_high", "cleared", "0")]


def test_unknown_readings_neither_fire_nor_clear() -> None:
    unknown = _sample(memory_used=None, utilization_gpu=None, throttle_reasons=None,
                      ecc_volatile_uncorrected=None)  # fmt: skip
    assert _run(AlertEngine(default_rules()), [_snap(t, unknown) for t in range(0, 900, 30)]) == []


def test_a_muted_rule_says_nothing_and_muting_a_firing_one_drops_it() -> None:
    full = _sample(memory_used=78 * GiB)
    muted = AlertEngine(_rules(memory_high={"muted": True}))
    assert _run(muted, [_snap(t, full) for t in (0, 30, 60)]) == []
    engine = AlertEngine(default_rules())
    assert _run(engine, [_snap(0, full), _snap(30, full)])
    assert [c.rule for c in engine.firing()] == ["memory_high"]
    engine.mute("memory_high")
    assert engine.firing() == ()
    assert _run(engine, [_snap(t, full) for t in (60, 90, 120)]) == []


def test_throttling_counts_only_thermal_and_power_limits() -> None:
    power = _sample(throttle_reasons=("sw_power_cap",))
    other = _sample(throttle_reasons=("app_clocks", "sync_boost"))
    engine = AlertEngine(default_rules())
    assert _run(engine, [_snap(t, other) for t in (0, 61, 120)]) == []
    changes = engine.update(_snap(121, power)) + engine.update(_snap(181, power))
    assert [(c.rule, c.timestamp - T0) for c in changes] == [("throttling", 181)]
    assert "sw_power_cap" in changes[0].message


def test_xid_events_fire_with_nvidia_action_and_unknown_codes_say_so() -> None:
    events = (
        GpuEvent(T0, 0, "xid", 13),
        GpuEvent(T0, 1, "xid", 79),
        GpuEvent(T0, 1, "xid", 9999),
        GpuEvent(T0, 0, "pstate"),
    )
    changes = AlertEngine(default_rules()).update(_snap(0, _sample(), _sample(), events=events))
    xids = {c.message.split(":")[1].strip(): c for c in changes if c.rule == "xid"}
    assert set(xids) == {"XID 13", "XID 79", "XID 9999"}
    assert xids["XID 13"].action == "restart the application"
    assert xids["XID 13"].severity == "warning"
    assert xids["XID 79"].action is not None and "reboot the node" in xids["XID 79"].action
    assert xids["XID 79"].severity == "critical"
    assert xids["XID 9999"].action == "unknown XID, see NVIDIA's XID catalog"
    assert "unknown XID" in xids["XID 9999"].message


def test_an_xid_fires_once_and_clears_after_quiet() -> None:
    engine = AlertEngine(default_rules())
    xid = (GpuEvent(T0, 0, "xid", 43),)
    snaps = [_snap(0, events=xid), _snap(100, events=xid), _snap(200), _snap(499), _snap(500)]
    assert _run(engine, snaps) == [(0, "xid", "firing", "0"), (500, "xid", "cleared", "0")]


def test_uncorrected_ecc_from_the_counter_or_an_event() -> None:
    engine = AlertEngine(default_rules())
    dbe = (GpuEvent(T0, 1, "ecc_dbe"),)
    changes = engine.update(_snap(0, _sample(ecc_volatile_uncorrected=2), _sample(), events=dbe))
    assert sorted((c.rule, c.gpu, c.severity) for c in changes) == [
        ("ecc_uncorrected", "0", "critical"),
        ("ecc_uncorrected", "1", "critical"),
    ]


def test_a_lost_gpu_fires_at_once_and_clears_when_it_is_back() -> None:
    engine = AlertEngine(default_rules())
    snaps = [_snap(0, _sample()), _snap(1, None), _snap(2, None), _snap(3, _sample())]
    assert _run(engine, snaps) == [(1, "gpu_lost", "firing", "0"), (3, "gpu_lost", "cleared", "0")]


def test_memory_held_while_idle_for_ten_minutes() -> None:
    idle = _sample(memory_used=2 * GiB, utilization_gpu=0)
    small = _sample(memory_used=GiB // 2, utilization_gpu=0)
    engine = AlertEngine(default_rules())
    assert _run(engine, [_snap(t, small) for t in range(0, 1300, 100)]) == []
    assert _run(engine, [_snap(t, idle) for t in range(1300, 2000, 100)]) == [
        (1900, "memory_idle", "firing", "0")
    ]


def test_temperature_near_the_gpu_s_own_slowdown_threshold() -> None:
    hot, warm = _sample(temperature_c=88), _sample(temperature_c=84)
    engine = AlertEngine(default_rules())
    unknown = _snap(0, hot, hot)
    assert engine.update(unknown) == []
    assert any("inactive on GPU 0, 1" in n for n in engine.notes())
    known = replace(unknown, devices=tuple(
        replace(d, info=replace(d.info, temp_slowdown_c=90)) for d in unknown.devices
    ))  # fmt: skip
    known = replace(known, timestamp=T0 + 1, devices=(replace(known.devices[0], sample=warm),
                                                       known.devices[1]))  # fmt: skip
    assert [(c.rule, c.gpu) for c in engine.update(known)] == [("temperature_near_slowdown", "1")]
    assert engine.notes() == ()
    armed = AlertEngine(_rules(temperature_near_slowdown={"slowdown_c": 88.0}))
    assert [c.gpu for c in armed.update(_snap(0, warm, hot))] == ["0", "1"]  # 84 >= 88 - 5
    assert armed.notes() == ()


def _proc(pid: int, memory: int, gpu: int = 0) -> GpuProcess:
    return GpuProcess(gpu, pid, "compute", gpu_memory=memory, cmdline=("python", "train.py"))


def test_a_watched_process_ending_reports_its_peak_memory() -> None:
    engine = AlertEngine(_rules(process_ended={"commands": ("train.py",)}))
    snaps = [
        _snap(0, processes=(_proc(7, 4 * GiB),)),
        _snap(10, processes=(_proc(7, 12 * GiB),)),
        _snap(20, processes=(_proc(7, 6 * GiB),)),
        _snap(30),
    ]
    changes: list[AlertChange] = []
    for s in snaps:
        changes += engine.update(s)
    assert [(c.rule, c.pid, c.state) for c in changes] == [("process_ended", 7, "firing")]
    assert "peak GPU memory 12.0 GiB" in changes[0].message
    assert "python train.py" in changes[0].message


def test_a_process_on_a_lost_gpu_has_not_ended() -> None:
    engine = AlertEngine(_rules(process_ended={"pids": (7,)}))
    engine.update(_snap(0, processes=(_proc(7, GiB),)))
    assert [c.rule for c in engine.update(_snap(1, None))] == ["gpu_lost"]


@pytest.mark.parametrize("name", [r.name for r in default_rules()])
def test_every_rule_is_quiet_on_a_healthy_gpu(name: str) -> None:
    engine = AlertEngine(_rules(process_ended={"pids": (7,)}))
    snaps = [_snap(t, processes=(_proc(7, GiB),)) for t in range(0, 1200, 60)]
    assert [c for c in _run(engine, snaps) if c[1] == name] == []


def test_watching_a_process_later_reports_its_end() -> None:
    engine = AlertEngine(default_rules())
    engine.update(_snap(0, processes=(_proc(9, GiB),)))
    assert engine.watch(9) and not engine.watch(9)
    engine.update(_snap(1, processes=(_proc(9, 3 * GiB),)))
    changes = engine.update(_snap(2))
    assert [(c.rule, c.pid) for c in changes] == [("process_ended", 9)]
    assert "peak GPU memory 3.0 GiB" in changes[0].message
