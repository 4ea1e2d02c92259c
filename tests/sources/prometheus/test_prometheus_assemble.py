"""Assembling one refresh's answers into hosts: the work grows with the answers, not their square."""

from __future__ import annotations

import builtins
from collections.abc import Iterable
from typing import Any

import pytest

from gputui.sources.prometheus import assemble as assemble_module
from gputui.sources.prometheus.api import Sample
from gputui.sources.prometheus.series import GPU_UP, PROC_MEMORY, PROC_SM


def _fleet(hosts: int, gpus: int = 8, procs: int = 4) -> tuple[list[Sample], list[Sample]]:
    values: list[Sample] = []
    fresh: list[Sample] = []
    for h in range(hosts):
        base = {"Hostname": f"gpu-{h:04d}", "instance": f"gpu-{h:04d}:9400"}
        for g in range(gpus):
            gpu = {**base, "gpu": str(g)}
            fresh.append(Sample({**gpu, "modelName": "NVIDIA H100"}, 1000.0, 999.0))
            values.append(Sample({**gpu, "__name__": GPU_UP}, 1000.0, 1.0))
            for p in range(procs):
                proc = {**gpu, "pid": str(1000 + g * procs + p), "command": "python"}
                values.append(Sample({**proc, "__name__": PROC_MEMORY}, 1000.0, 1e9))
                values.append(Sample({**proc, "__name__": PROC_SM}, 1000.0, 50.0))
    return values, fresh


def test_every_host_gets_its_own_processes_in_gpu_and_pid_order() -> None:
    values, fresh = _fleet(3, gpus=2, procs=2)
    hosts = assemble_module.assemble(
        values, fresh, [], 1000.0, intervals={}, known={}, gputui_instances=set()
    )
    assert [h.name for h in hosts] == ["gpu-0000", "gpu-0001", "gpu-0002"]
    for h in hosts:
        assert [(p.gpu_index, p.pid) for p in h.processes] == [
            (0, 1000), (0, 1001), (1, 1002), (1, 1003)
        ]  # fmt: skip
        assert all(p.gpu_memory == 10**9 and p.sm_util == 50 for p in h.processes)


def test_sorting_work_is_linear_in_the_fleet(monkeypatch: pytest.MonkeyPatch) -> None:
    """Counted, not timed: the items every sort in assemble goes through, against the
    samples it was given. A sort of the whole fleet's processes per host is hosts x that."""
    sorted_items = 0

    def counting(items: Iterable[Any], **kwargs: Any) -> list[Any]:
        nonlocal sorted_items
        out = builtins.sorted(items, **kwargs)
        sorted_items += len(out)
        return out

    values, fresh = _fleet(50)
    monkeypatch.setattr(assemble_module, "sorted", counting, raising=False)
    assemble_module.assemble(
        values, fresh, [], 1000.0, intervals={}, known={}, gputui_instances=set()
    )
    assert sorted_items <= 3 * (len(values) + len(fresh))
