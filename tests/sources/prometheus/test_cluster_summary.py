"""The host table's aggregated answer read into hosts (summary.py), without a server."""

from __future__ import annotations

from gputui.sources.prometheus.api import Sample
from gputui.sources.prometheus.summary import summarise

NOW = 1_767_225_600.0


def stat(name: str, value: float, **labels: str) -> Sample:
    return Sample({"stat": name, **labels}, NOW, value)


def fleet(*extra: Sample) -> list[Sample]:
    a = {"Hostname": "a", "instance": "a:9400"}
    return [
        stat("gpus", 8, **a), stat("seen", NOW - 3, **a), stat("util_mean", 40, **a),
        stat("util_max", 90, **a), stat("used", 1024, **a), stat("free", 3072, **a),
        stat("power", 800.5, **a), stat("hottest", 71, gpu="5", **a),
        stat("up", 1, __name__="up", instance="a:9400"), *extra,
    ]  # fmt: skip


def test_figures_of_a_dcgm_host() -> None:
    (h,) = summarise(fleet(), NOW, intervals={"a:9400": 15.0}, known={})
    assert (h.name, h.gpus, h.state, h.exporters) == ("a", 8, "up", ("dcgm",))
    assert (h.util_mean, h.util_max, h.power_w) == (40, 90, 800.5)
    assert h.memory_used == 1024 * 2**20 and h.memory_total == 4096 * 2**20
    assert (h.hottest_c, h.hottest_gpu) == (71, 5)
    assert h.age_s == 3.0


def test_states_down_stale_and_vanished() -> None:
    down = [s for s in fleet() if s.labels["stat"] != "up"] + [
        stat("up", 0, __name__="up", instance="a:9400")
    ]
    (h,) = summarise(down, NOW, intervals={"a:9400": 15.0}, known={})
    assert h.state == "down"
    (h,) = summarise(fleet(), NOW + 40, intervals={"a:9400": 15.0}, known={})
    assert h.state == "stale"  # newest sample 43 s old, two 15 s scrapes allowed
    # its series vanished, its target still listed: kept with its last numbers, down
    only_up = [stat("up", 0, __name__="up", instance="a:9400")]
    (gone,) = summarise(only_up, NOW + 5, intervals={}, known={"a": h})
    assert (gone.name, gone.state, gone.gpus, gone.util_mean) == ("a", "down", 8, 40)
    assert summarise([], NOW + 5, intervals={}, known={"a": h}) == ()  # the target left


def test_a_mixed_host_takes_gputui_figures_first() -> None:
    g = {"Hostname": "a", "instance": "a:9835"}
    mixed = fleet(
        stat("gpus_up", 8, **g), stat("util_mean", 55, **g), stat("last_poll", NOW - 1, source="nvml", **g),
        stat("total_bytes", 8 * 80 * 2**30, **g),
    )  # fmt: skip
    (h,) = summarise(mixed, NOW, intervals={}, known={})
    assert h.util_mean == 55  # gputui's
    assert h.util_max == 90  # dcgm-exporter's, which gputui's answer lacks
    assert h.memory_total == 8 * 80 * 2**30  # gputui's total, not used + free
    assert h.exporters == ("dcgm", "gputui") and h.instances == ("a:9400", "a:9835")
    assert h.age_s == 3.0  # the newest sample (3 s) is older than the last poll (1 s)
