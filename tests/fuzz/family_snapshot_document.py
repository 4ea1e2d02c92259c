"""Fuzz family `snapshot_document`: damaged `gputui snapshot --json` documents, read back.

A valid document (a shipped scenario's poll, or in the property test a generated
snapshot) is damaged: a value swapped for a hostile one (wrong types, huge or special
numbers, control characters, deep nesting), a key dropped or added, a value wrapped
in a list or an object, or the text itself cut and spliced. The property:
`snapshot_from_json` refuses with one line (SnapshotDecodeError, exit 2) or returns a
Snapshot whose every field has its declared type, whose text is visible and which
encodes and decodes again to itself. Anything else escaping is a crash.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from random import Random
from typing import Any

import generators as gen

FAMILY = "snapshot_document"
REPO = Path(__file__).resolve().parents[2]
SCENARIOS = sorted((REPO / "src/gputui/sources/simulated/scenarios").glob("*.toml"))
if str(REPO) not in sys.path:  # the contract suite's type check, from benchmarks/fuzz.py too
    sys.path.append(str(REPO))
HOSTILE = [
    *gen.NASTY, *gen.HUGE_INTS, *gen.SPECIAL_FLOATS, *gen.NASTY_STRINGS,
    None, [None], [[[]]], {"schema_version": 1}, "NaN", -(2**63), 100.0001,
]  # fmt: skip


def _paths(node: Any, at: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place in the document a value sits."""
    if isinstance(node, dict):
        items: Any = node.items()
    elif isinstance(node, list):
        items = enumerate(node)
    else:
        return []
    found: list[tuple[Any, ...]] = []
    for key, child in items:
        found.append((*at, key))
        found += _paths(child, (*at, key))
    return found


def damage(rng: Random, doc: dict[str, Any]) -> str:
    """The document, damaged one to three times, as JSON text (NaN and huge ints allowed)."""
    for _ in range(rng.randint(1, 3)):
        paths = _paths(doc)
        if not paths:
            break
        path = rng.choice(paths)
        parent: Any = doc
        for key in path[:-1]:
            parent = parent[key]
        key = path[-1]
        op = rng.randrange(5)
        if op == 0:
            parent[key] = rng.choice(HOSTILE)
        elif op == 1 and isinstance(parent, dict):
            del parent[key]
        elif op == 2 and isinstance(parent, dict):
            parent[rng.choice(["extra", "\x1b[2J", "command", "schema_version"])] = 1
        elif op == 3:
            depth = rng.choice([5, 400])
            parent[key] = json.loads("[" * depth + "]" * depth)
        else:
            value = parent[key]
            parent[key] = [value] if not isinstance(value, list) else {"0": value}
    text = json.dumps(doc, allow_nan=True)
    if rng.random() < 0.3:
        text = gen.mutate_text(rng, text)
    if rng.random() < 0.1:
        text = "[" * 5000 + text + "]" * 5000
    return text


def make_case(rng: Random) -> str:
    from gputui.model.snapshot_encode import snapshot_to_dict
    from gputui.sources.simulated.source import SimulatedSource

    source = SimulatedSource.from_scenario(rng.choice(SCENARIOS), clock=lambda: rng.uniform(0, 1e5))
    return damage(rng, snapshot_to_dict(source.poll()))


def case_text(case: str) -> str:
    return case


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, (tuple, frozenset)):
        return [s for v in value for s in _strings(v)]
    if hasattr(value, "__record_fields__"):
        return [s for n in value.__record_fields__ for s in _strings(getattr(value, n))]
    return []


def check(text: str) -> gen.Outcome:
    """Decode `text`: a one-line refusal, or a Snapshot that holds every invariant."""
    from gputui.core.textsafe import is_visible
    from gputui.model.snapshot_decode import SnapshotDecodeError, snapshot_from_json
    from gputui.model.snapshot_encode import snapshot_to_json
    from tests.sources.test_source_contract import check_snapshot

    try:
        decoded = snapshot_from_json(text)
    except SnapshotDecodeError as exc:
        message = str(exc)
        if not message.startswith("snapshot: ") or "\n" in message or exc.exit_code != 2:
            return gen.Outcome("wrong-accept", f"refusal is not one clean line: {message[:80]!r}")
        return gen.Outcome("rejected", message)
    wrong = check_snapshot(decoded)
    if wrong:
        return gen.Outcome("wrong-accept", f"a field of the wrong type: {wrong[0][:120]}")
    hidden = [s for s in _strings(decoded) if not is_visible(s)]
    if hidden:
        return gen.Outcome("wrong-accept", f"a control character kept: {hidden[0][:40]!r}")
    if snapshot_from_json(snapshot_to_json(decoded)) != decoded:
        return gen.Outcome("wrong-accept", "decoded, it does not encode back to itself")
    return gen.OK


def run_case(case: str, workdir: Path) -> gen.Outcome:
    del workdir  # nothing is written: the decoder reads text
    return check(case)
