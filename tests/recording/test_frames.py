"""Keyframes and deltas: any document round-trips, new fields included; a damaged frame is
one line, never a traceback nor a wrong snapshot (hypothesis)."""

from __future__ import annotations

import contextlib
import copy
import shutil
import sqlite3
import zlib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gputui.core.errors import UserError
from gputui.recording import frames
from gputui.recording.reader import open_recording

from .conftest import record_polls

leaf = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**53), 2**53),
    st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=5),
    st.lists(st.integers(0, 100), max_size=4), st.lists(st.text(max_size=3), max_size=3),
)  # fmt: skip
documents = st.recursive(
    st.dictionaries(st.text(min_size=1, max_size=4), leaf, max_size=4),
    lambda inner: st.dictionaries(
        st.text(min_size=1, max_size=4), st.one_of(inner, st.lists(inner, max_size=3)), max_size=4
    ),
    max_leaves=20,
)


def _mutated(document: dict[str, Any], values: list[Any]) -> dict[str, Any]:
    out = copy.deepcopy(document)
    for (container, key), value in zip(frames.leaf_refs(out), values, strict=True):
        container[key] = value
    return out


@given(documents, st.data())
def test_a_delta_takes_a_document_to_the_next_exactly(document: dict[str, Any], data: Any) -> None:
    shape, before = frames.flatten(document)
    after = [data.draw(st.one_of(st.just(v), leaf)) for v in before]
    target = _mutated(document, after)
    if frames.flatten(target)[0] != shape:
        return  # a new shape is stored as a keyframe, not a delta
    delta = frames.unpack(frames.pack(frames.changes(before, after)))
    replayed = copy.deepcopy(document)
    frames.apply(frames.leaf_refs(replayed), delta)
    assert replayed == target
    assert repr(frames.flatten(replayed)[1]) == repr(after)  # -0.0 too
    assert [type(v) for v in frames.flatten(replayed)[1]] == [type(v) for v in after]


def test_a_field_no_code_names_is_stored_and_read_back() -> None:
    """What the alerts helper adds to the Snapshot (NVML events) flows through unnamed."""
    before = {"timestamp": 1.0, "devices": [{"events": [{"xid": 79, "at": 1.0}]}]}
    after = {"timestamp": 2.0, "devices": [{"events": [{"xid": 48, "at": 2.0}]}]}
    delta = frames.changes(frames.flatten(before)[1], frames.flatten(after)[1])
    frames.apply(frames.leaf_refs(before), frames.unpack(frames.pack(delta)))
    assert before == after


def test_one_and_one_point_zero_and_true_are_different_changes() -> None:
    assert frames.changes([1, 1, 1.0], [1.0, True, 1]) != [[], []]
    assert repr(frames.changes([0.0, -0.0, None], [-0.0, 0.0, None])) == "[[1, -0.0, 1, 0.0], []]"
    doc = {"a": 1, "b": 1, "c": 1.0}
    frames.apply(frames.leaf_refs(doc), frames.changes([1, 1, 1.0], [1.0, True, 1]))
    assert [type(v) for v in doc.values()] == [float, bool, int]


@pytest.fixture(scope="module")
def small_recording(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("fuzz") / "run.sqlite"
    record_polls(path, 6, name="demo")
    return path


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    row=st.integers(1, 6),
    body=st.one_of(
        st.binary(max_size=64),
        st.builds(frames.pack, st.one_of(documents, st.lists(leaf, max_size=6), leaf)),
    ),
)
def test_a_damaged_frame_with_a_matching_checksum_is_one_line(
    small_recording: Path, tmp_path_factory: pytest.TempPathFactory, row: int, body: bytes
) -> None:
    path = tmp_path_factory.mktemp("case") / "run.sqlite"
    shutil.copy(small_recording, path)
    with contextlib.closing(sqlite3.connect(path)) as db:
        db.execute(
            "UPDATE frame SET body = ?, crc = ? WHERE seq = ?", (body, zlib.crc32(body), row)
        )
        db.commit()
    with open_recording(path) as recording:
        with contextlib.suppress(UserError):
            for snapshot in recording.snapshots():
                assert snapshot.devices  # decoded through the checked decoder, or refused
        with contextlib.suppress(UserError):
            recording.snapshot_at(recording.span()[1])  # type: ignore[index]
