"""`@record` (model/record.py) behaves as `@dataclass(frozen=True, slots=True)` did for the
snapshot types: each is compared with a real dataclass built from the same fields."""

from __future__ import annotations

import copy
import dataclasses
import inspect
import pickle
import subprocess
import sys

import pytest

from gputui.model import record as rec
from gputui.model.snapshot import (
    DeviceInfo,
    DeviceSample,
    DeviceSnapshot,
    GpuProcess,
    HostSnapshot,
    MigDevice,
    Snapshot,
)

RECORDS = (DeviceInfo, MigDevice, DeviceSample, DeviceSnapshot, GpuProcess, HostSnapshot, Snapshot)


def _twin(cls: type) -> type:
    """The frozen slotted dataclass with `cls`'s fields, annotations and defaults."""
    ns: dict[str, object] = {"__annotations__": dict(cls.__record_annotations__)}  # type: ignore[attr-defined]
    ns.update(cls.__record_defaults__)  # type: ignore[attr-defined]
    return dataclasses.dataclass(frozen=True, slots=True)(type(cls.__name__, (), ns))


def _sample_values(cls: type) -> dict[str, object]:
    """A distinct, hashable value for every field (what the type is does not matter here)."""
    return {name: (i, name) for i, name in enumerate(rec.field_names(cls))}


@pytest.mark.parametrize("cls", RECORDS, ids=lambda c: c.__name__)
def test_signature_repr_eq_and_hash_match_a_dataclass(cls: type) -> None:
    twin = _twin(cls)
    assert str(inspect.signature(cls)) == str(inspect.signature(twin))
    values = _sample_values(cls)
    a, b, t = cls(**values), cls(*values.values()), twin(**values)
    assert repr(a) == repr(t)
    assert a == b and hash(a) == hash(b) == hash(t)
    assert a != t  # another class is never equal, as between two dataclasses
    first = next(iter(values))
    other = cls(**{**values, first: "changed"})
    assert a != other
    assert (a == other) is False
    assert cls.__match_args__ == twin.__match_args__  # type: ignore[attr-defined]


@pytest.mark.parametrize("cls", RECORDS, ids=lambda c: c.__name__)
def test_frozen_and_slotted(cls: type) -> None:
    obj = cls(**_sample_values(cls))
    name = rec.field_names(cls)[0]
    with pytest.raises(AttributeError):
        setattr(obj, name, 1)
    with pytest.raises(AttributeError):
        delattr(obj, name)
    with pytest.raises(AttributeError):
        obj.not_a_field = 1
    assert not hasattr(obj, "__dict__")
    assert getattr(obj, name) == (0, name)


def test_constructor_errors_are_a_dataclass_s() -> None:
    with pytest.raises(TypeError, match="missing 2 required positional arguments: 'index' and 'name'"):
        DeviceInfo()  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="unexpected keyword argument 'bogus'"):
        DeviceInfo(0, "x", bogus=1)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="multiple values for argument 'name'"):
        DeviceInfo(0, "x", name="y")  # type: ignore[misc]


@pytest.mark.parametrize("cls", RECORDS, ids=lambda c: c.__name__)
def test_replace_and_fields_here_and_in_dataclasses(cls: type) -> None:
    values = _sample_values(cls)
    obj = cls(**values)
    first, last = rec.field_names(cls)[0], rec.field_names(cls)[-1]
    ours = rec.replace(obj, **{last: "new"})
    theirs = dataclasses.replace(obj, **{last: "new"})
    assert ours == theirs == cls(**{**values, last: "new"})
    assert getattr(ours, first) == values[first]
    assert rec.field_names(obj) == tuple(f.name for f in dataclasses.fields(cls)) == tuple(values)
    assert dataclasses.is_dataclass(obj)
    assert dataclasses.asdict(obj) == {k: v for k, v in values.items()}
    with pytest.raises(TypeError):
        rec.replace(obj, bogus=1)


def test_asdict_recurses_into_nested_records() -> None:
    dev = DeviceSnapshot(info=DeviceInfo(index=1, name="gpu"), sample=DeviceSample(fan_pct=30))
    out = dataclasses.asdict(dev)
    assert out["info"]["name"] == "gpu" and out["sample"]["fan_pct"] == 30


@pytest.mark.parametrize("cls", RECORDS, ids=lambda c: c.__name__)
def test_pickle_and_copy_round_trip(cls: type) -> None:
    obj = cls(**_sample_values(cls))
    assert pickle.loads(pickle.dumps(obj)) == obj
    assert copy.copy(obj) == obj and copy.deepcopy(obj) == obj


def test_pattern_matching_by_position() -> None:
    match GpuProcess(0, 42, "compute"):
        case GpuProcess(gpu, pid, kind):
            assert (gpu, pid, kind) == (0, 42, "compute")
        case _:
            pytest.fail("GpuProcess did not match by position")


def test_methods_and_properties_of_the_class_body_are_kept() -> None:
    proc = GpuProcess(0, 1, "compute", cmdline=("python", "train.py"))
    assert proc.command == "python train.py"
    assert DeviceSnapshot(info=DeviceInfo(index=3, name="g")).index == 3
    assert DeviceInfo.__doc__ and DeviceInfo.__qualname__ == "DeviceInfo"
    assert DeviceInfo.__module__ == "gputui.model.snapshot"


def test_definitions_a_record_cannot_honour_are_refused() -> None:
    with pytest.raises(TypeError, match="mutable"):

        @rec.record
        class Bad:
            items: list[int] = []  # noqa: RUF012 - the point of the test

    with pytest.raises(TypeError, match="without default follows"):

        @rec.record
        class Order:
            a: int = 0
            b: int

    with pytest.raises(TypeError, match="do not inherit"):

        @rec.record
        class Child(DeviceInfo):
            extra: int = 0


def test_snapshot_types_do_not_import_dataclasses() -> None:
    """The point of record.py: building and replacing records costs no dataclasses/inspect
    import; only a dataclasses call on a record does."""
    code = (
        "import sys\n"
        "from gputui.model.record import replace\n"
        "from gputui.model.snapshot import DeviceInfo\n"
        "d = replace(DeviceInfo(0, 'x'), name='y')\n"
        "print(sorted(m for m in ('dataclasses', 'inspect') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_eq_and_hash_generated_on_first_use_stay_right_afterwards() -> None:
    @rec.record
    class Pair:
        a: int
        b: str = "x"

    stub = Pair.__dict__["__eq__"]
    assert Pair(1) == Pair(1, "x") and hash(Pair(1)) == hash((1, "x"))
    assert Pair.__dict__["__eq__"] is not stub  # compiled and put on the class
    assert Pair(1) == Pair(1) and Pair(1) != Pair(2) and Pair(1) != (1, "x")
    assert len({Pair(1), Pair(1, "x"), Pair(2)}) == 2
    assert Pair.__eq__.__qualname__.endswith("Pair.__eq__")
