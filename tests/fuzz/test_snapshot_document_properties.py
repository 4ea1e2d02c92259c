"""Hostile `gputui snapshot --json` documents: the decoder answers with a Snapshot or one line.

A valid document (a generated snapshot, encoded) is damaged: a value swapped for
a hostile one (wrong types, huge or special numbers, control characters, deep
nesting), a key dropped or added, a list for an object, or the text itself cut
and spliced. Whatever comes in, `snapshot_from_json` either refuses with a one-line
SnapshotDecodeError or returns a Snapshot whose every field has its declared type,
whose text is visible and which encodes again: never a traceback.
"""

from __future__ import annotations

import json
from random import Random
from typing import Any

import generators as gen
from hypothesis import given
from hypothesis import strategies as st
from properties import bounded

from gputui.core.textsafe import is_visible
from gputui.model.snapshot import Snapshot
from gputui.model.snapshot_decode import SnapshotDecodeError, snapshot_from_json
from gputui.model.snapshot_encode import snapshot_to_dict, snapshot_to_json
from tests.snapshot_strategies import SNAPSHOTS
from tests.sources.test_source_contract import check_snapshot

HOSTILE = [
    *gen.NASTY, *gen.HUGE_INTS, *gen.SPECIAL_FLOATS, *gen.NASTY_STRINGS,
    None, [None], [[[]]], {"schema_version": 1}, "NaN", -(2**63), 100.0001,
]  # fmt: skip


def _paths(node: Any, at: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place in the document a value sits, the root's children first."""
    found: list[tuple[Any, ...]] = []
    items = (
        node.items()
        if isinstance(node, dict)
        else enumerate(node)
        if isinstance(node, list)
        else ()
    )
    for key, child in items:
        found.append((*at, key))
        found += _paths(child, (*at, key))
    return found


def _parent(doc: Any, path: tuple[Any, ...]) -> Any:
    for key in path[:-1]:
        doc = doc[key]
    return doc


def damage(rng: Random, doc: dict[str, Any]) -> str:
    """The document, damaged once to a few times, as JSON text (NaN and huge ints allowed)."""
    for _ in range(rng.randint(1, 3)):
        paths = _paths(doc)
        if not paths:
            break
        path = rng.choice(paths)
        parent, key = _parent(doc, path), path[-1]
        op = rng.randrange(5)
        if op == 0:
            parent[key] = rng.choice(HOSTILE)
        elif op == 1 and isinstance(parent, dict):
            del parent[key]
        elif op == 2 and isinstance(parent, dict):
            parent[rng.choice(["extra", "\x1b[2J", "command", "schema_version"])] = 1
        elif op == 3:
            depth = rng.choice([5, 400, 3000])
            parent[key] = json.loads("[" * depth + "]" * depth) if depth < 900 else "deep"
        else:
            value = parent[key]
            parent[key] = [value] if not isinstance(value, list) else {"0": value}
    text = json.dumps(doc, allow_nan=True)
    if rng.random() < 0.3:
        text = gen.mutate_text(rng, text)
    if rng.random() < 0.1:
        text = "[" * 5000 + text + "]" * 5000
    return text


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, (tuple, frozenset)):
        return [s for v in value for s in _strings(v)]
    if hasattr(value, "__record_fields__"):
        return [s for n in value.__record_fields__ for s in _strings(getattr(value, n))]
    return []


@bounded(150)
@given(SNAPSHOTS, st.randoms(use_true_random=False))
def test_a_damaged_document_is_decoded_soundly_or_refused_in_one_line(
    snapshot: Snapshot, rng: Random
) -> None:
    text = damage(rng, snapshot_to_dict(snapshot))
    with gen.no_hang(30):
        try:
            decoded = snapshot_from_json(text)
        except SnapshotDecodeError as exc:
            assert str(exc).startswith("snapshot: ") and "\n" not in str(exc)
            assert exc.exit_code == 2
            return
    assert check_snapshot(decoded) == []
    assert all(is_visible(s) for s in _strings(decoded))
    assert snapshot_from_json(snapshot_to_json(decoded)) == decoded
