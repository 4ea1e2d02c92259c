"""The contract every telemetry source keeps: one suite, run on NVML, the simulator and Prometheus.

What a view or the fit checker may rely on, whatever the source:
- the same snapshot fields, each None or of its declared type;
- a field a device cannot report is None (N/A), never 0;
- a lost GPU is reported as lost, with no numbers, from the first poll on;
- a snapshot carries the Unix time of its poll, advancing, and a poll returns in bounded time.

The GPUs and the per-source capabilities are in conftest.py. A test of a
capability runs only on the sources that have it; the `_lack_` tests check,
on the others, that the lack is real.
"""

from __future__ import annotations

import dataclasses
import time
import types
import typing
from collections.abc import Callable
from typing import Any

import pytest

from gputui.model.snapshot import (
    GPM_FIELDS,
    DeviceInfo,
    DeviceSample,
    DeviceSnapshot,
    GpuProcess,
    HostSnapshot,
    MigDevice,
    Snapshot,
)
from tests.waiting import poll_until

from .conftest import (
    CANNOT_REPORT,
    CAPABILITIES,
    HEALTHY,
    LOSES,
    LOST_FROM_START,
    REPORTED_FIELDS,
    SAMPLE_FIELDS,
    SETUPS,
    SOURCES,
    UNREPORTABLE,
    UUIDS,
    SourceCase,
    with_capability,
    without_capability,
)

SETTLE_S = 15.0  # for values a source reads in the background (PCIe) or after a scrape


def device(snapshot: Snapshot, index: int) -> DeviceSnapshot:
    found = [d for d in snapshot.devices if d.info.index == index]
    assert len(found) == 1, f"{snapshot.source}: {len(found)} devices with index {index}"
    return found[0]


def settled(case: SourceCase, ready: Callable[[Snapshot], bool]) -> Snapshot:
    """Poll until `ready(snapshot)`; the last snapshot either way (the test then asserts)."""
    last: list[Snapshot] = []

    def poll_ready() -> bool | None:
        last[:] = [case.poll()]
        return True if ready(last[0]) else None

    poll_until(poll_ready, SETTLE_S, step=0.25)
    return last[0]


# --- types ------------------------------------------------------------------------------

_HINTS: dict[type, dict[str, Any]] = {}


def _hints(cls: type) -> dict[str, Any]:
    """A record's field types (its annotations are strings, and it keeps them apart)."""
    if cls not in _HINTS:
        import gputui.model.snapshot as module

        hints = {f.name: f.type for f in dataclasses.fields(cls)}
        _HINTS[cls] = {
            n: eval(t, vars(module)) if isinstance(t, str) else t for n, t in hints.items()
        }
        assert _HINTS[cls], cls
    return _HINTS[cls]


def _is(value: object, hint: Any) -> bool:
    """isinstance for the annotations the snapshot types use (no bool where an int is meant)."""
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        return any(_is(value, h) for h in typing.get_args(hint))
    if hint is type(None):
        return value is None
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if origin is tuple:
        args = typing.get_args(hint)
        if not isinstance(value, tuple):
            return False
        if len(args) == 2 and args[1] is Ellipsis:
            return all(_is(v, args[0]) for v in value)
        return len(args) == len(value) and all(_is(v, a) for v, a in zip(value, args, strict=True))
    if origin is frozenset:
        (arg,) = typing.get_args(hint)
        return isinstance(value, frozenset) and all(_is(v, arg) for v in value)
    assert isinstance(hint, type), hint
    return isinstance(value, hint)


def check_record(value: object, cls: type, where: str) -> list[str]:
    """Every annotated field of `value` (a `cls`) holds its declared type; the wrong ones."""
    if not isinstance(value, cls):
        return [f"{where}: {type(value).__name__}, not {cls.__name__}"]
    return [
        f"{where}.{name} = {getattr(value, name)!r} is not {hint}"
        for name, hint in _hints(cls).items()
        if not _is(getattr(value, name), hint)
    ]


def check_snapshot(snapshot: Snapshot) -> list[str]:
    wrong = check_record(snapshot, Snapshot, "snapshot")
    for d in snapshot.devices:
        where = f"device {d.info.index}"
        wrong += check_record(d, DeviceSnapshot, where)
        wrong += check_record(d.info, DeviceInfo, f"{where}.info")
        if d.sample is not None:
            wrong += check_record(d.sample, DeviceSample, f"{where}.sample")
        for m in d.mig_devices:
            wrong += check_record(m, MigDevice, f"{where}.mig")
    for p in snapshot.processes:
        wrong += check_record(p, GpuProcess, f"process {p.pid}")
    if snapshot.host is not None:
        wrong += check_record(snapshot.host, HostSnapshot, "host")
    return wrong


# --- the registry ------------------------------------------------------------------------


def test_every_registered_source_is_under_contract() -> None:
    """A source added to sources/registry.py runs this suite: it needs its capabilities, the
    fields it reads and its set-up on the four GPUs here, or this fails."""
    from gputui.sources import registry

    assert set(CAPABILITIES) == set(REPORTED_FIELDS) == set(SETUPS) == set(registry.sources())


# --- same fields, typed -------------------------------------------------------------------


def test_every_field_is_none_or_of_its_declared_type(case: SourceCase) -> None:
    first = case.poll()
    assert first.source == case.source.name == case.name
    assert len(first.devices) == 4, [d.info.name for d in first.devices]
    assert check_snapshot(first) == []
    assert check_snapshot(case.poll()) == []


def test_a_gpu_without_gpm_draws_no_gpm_figure(case: SourceCase) -> None:
    """An A100 has no GPM: its four figures are None (never 0) and, where the source lists
    what a device cannot report, listed there."""
    gpu = device(case.poll(), HEALTHY)
    assert gpu.sample is not None
    assert [f for f in GPM_FIELDS if getattr(gpu.sample, f) is not None] == []
    if "unsupported_list" in CAPABILITIES[case.name]:
        assert set(GPM_FIELDS) <= gpu.unsupported


def test_a_healthy_gpu_reports_every_field_its_source_reads(case: SourceCase) -> None:
    """The fields a source reads are all filled on a GPU that supports everything; the rest None."""
    reads = REPORTED_FIELDS[case.name]

    def complete(s: Snapshot) -> bool:
        sample = device(s, HEALTHY).sample
        return sample is not None and all(getattr(sample, f) is not None for f in reads)

    gpu = device(settled(case, complete), HEALTHY)
    assert gpu.failed is None and gpu.sample is not None
    assert [f for f in reads if getattr(gpu.sample, f) is None] == []
    assert [f for f in SAMPLE_FIELDS if f not in reads and getattr(gpu.sample, f) is not None] == []
    assert gpu.info.name.endswith("NVIDIA A100-SXM4-80GB") and gpu.info.uuid == UUIDS[HEALTHY]
    assert gpu.info.memory_total == 81920 << 20
    assert gpu.sample.memory_total == 81920 << 20
    used, free = gpu.sample.memory_used, gpu.sample.memory_free
    assert used is not None and free is not None and used + free <= gpu.sample.memory_total


# --- N/A, never 0 -------------------------------------------------------------------------


def test_a_field_the_gpu_cannot_report_is_none_never_zero(case: SourceCase) -> None:
    def answered(s: Snapshot) -> bool:
        sample = device(s, CANNOT_REPORT).sample
        return sample is not None and sample.memory_used is not None

    gpu = device(settled(case, answered), CANNOT_REPORT)
    assert gpu.failed is None and gpu.sample is not None
    assert {f: getattr(gpu.sample, f) for f in UNREPORTABLE} == dict.fromkeys(UNREPORTABLE)
    # only those: the same GPU still reports what it can
    assert gpu.sample.memory_used is not None and gpu.sample.utilization_gpu is not None


@pytest.mark.parametrize("name", with_capability("unsupported_list"))
def test_a_device_names_the_fields_it_cannot_report(
    name: str, open_case: Callable[..., SourceCase]
) -> None:
    snapshot = open_case(name).poll()
    gpu = device(snapshot, CANNOT_REPORT)
    assert gpu.unsupported >= UNREPORTABLE
    assert device(snapshot, HEALTHY).unsupported.isdisjoint(UNREPORTABLE)
    for d in snapshot.devices:  # whatever a device lists as unsupported, it leaves None
        if d.sample is not None:
            zeros = {f: getattr(d.sample, f) for f in d.unsupported if f in SAMPLE_FIELDS}
            assert zeros == dict.fromkeys(zeros), d.info.index


@pytest.mark.parametrize("name", without_capability("unsupported_list"))
def test_lack_of_an_unsupported_list_is_real(
    name: str, open_case: Callable[..., SourceCase]
) -> None:
    """This source cannot tell "unsupported" from "not exported": it lists nothing."""
    snapshot = open_case(name).poll()
    assert [d.unsupported for d in snapshot.devices] == [frozenset()] * len(snapshot.devices)


# --- lost GPUs ----------------------------------------------------------------------------


def assert_lost(snapshot: Snapshot, index: int) -> None:
    gpu = device(snapshot, index)
    assert gpu.failed is not None and "lost" in gpu.failed.lower(), (index, gpu.failed)
    assert gpu.sample is None, f"a lost GPU must show no numbers: {gpu.sample}"
    assert gpu.mig_devices == ()
    assert [p.pid for p in snapshot.processes if p.gpu_index == index] == []


def test_a_gpu_lost_before_the_source_opened_is_reported_lost(case: SourceCase) -> None:
    first = case.poll()
    assert_lost(first, LOST_FROM_START)
    assert device(first, HEALTHY).failed is None  # one lost GPU takes no other with it
    assert_lost(case.poll(), LOST_FROM_START)


@pytest.mark.parametrize("name", SOURCES)
def test_a_gpu_lost_while_the_source_runs_is_reported_lost(
    name: str, open_case: Callable[..., SourceCase]
) -> None:
    """NVML: XID 79, the GPU fell off the bus. Simulator: its lost_after_s. Prometheus: the
    host's exporter stopped (its GPUs can no longer be vouched for)."""
    case = open_case(name, private=True)
    before = case.poll()
    assert device(before, LOSES).failed is None and device(before, LOSES).sample is not None
    case.lose()

    def lost(s: Snapshot) -> bool:
        return device(s, LOSES).failed is not None

    after = settled(case, lost)
    assert_lost(after, LOSES)
    assert device(after, HEALTHY).failed is None
    assert_lost(after, LOST_FROM_START)


# --- processes ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", with_capability("processes"))
def test_processes_name_their_gpu_and_pid(name: str, open_case: Callable[..., SourceCase]) -> None:
    snapshot = open_case(name).poll()
    indices = {d.info.index for d in snapshot.devices}
    assert [p.gpu_index for p in snapshot.processes if p.gpu_index == HEALTHY] != []
    for p in snapshot.processes:
        assert p.gpu_index in indices and p.pid > 0
        assert p.type in ("compute", "graphics", "compute+graphics", "mps")
        assert p.gpu_memory is None or p.gpu_memory > 0


@pytest.mark.parametrize("name", without_capability("processes"))
def test_lack_of_a_process_list_is_real(name: str, open_case: Callable[..., SourceCase]) -> None:
    """The fleet runs processes, but this source's Snapshot does not carry them."""
    assert open_case(name).poll().processes == ()


# --- host and versions --------------------------------------------------------------------


@pytest.mark.parametrize("name", with_capability("host"))
def test_the_host_is_described(name: str, open_case: Callable[..., SourceCase]) -> None:
    host = open_case(name).poll().host
    assert host is not None and host.hostname
    assert host.memory_total is not None and host.memory_total > 0


@pytest.mark.parametrize("name", without_capability("host"))
def test_lack_of_a_host_is_real(name: str, open_case: Callable[..., SourceCase]) -> None:
    assert open_case(name).poll().host is None


@pytest.mark.parametrize("name", with_capability("versions"))
def test_driver_and_cuda_versions_are_given(
    name: str, open_case: Callable[..., SourceCase]
) -> None:
    snapshot = open_case(name).poll()
    assert (snapshot.driver_version, snapshot.cuda_driver_version) == ("550.54.15", "12.4")


@pytest.mark.parametrize("name", without_capability("versions"))
def test_lack_of_versions_is_real(name: str, open_case: Callable[..., SourceCase]) -> None:
    snapshot = open_case(name).poll()
    assert (snapshot.driver_version, snapshot.cuda_driver_version) == (None, None)


# --- timing -------------------------------------------------------------------------------


def test_a_snapshot_carries_the_unix_time_of_its_poll_and_it_advances(case: SourceCase) -> None:
    before = time.time()
    first = case.poll()
    time.sleep(0.3)
    second = case.poll()
    after = time.time()
    assert before - 1.0 <= first.timestamp < second.timestamp <= after + 1.0
    assert second.timestamp - first.timestamp >= 0.2


def test_a_poll_returns_within_its_bound(case: SourceCase) -> None:
    case.poll()  # the first may pay one-off costs (imports, the scrape intervals)
    for _ in range(3):
        started = time.monotonic()
        case.poll()
        took = time.monotonic() - started
        assert took < case.poll_bound_s, f"{case.name}: a poll took {took:.2f} s"
