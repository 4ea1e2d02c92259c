"""A snapshot document as a keyframe or as the values that changed since the poll before.

A poll's snapshot, encoded as the `snapshot --json` document (model/snapshot_encode.py),
is stored whole every so often (a keyframe) and otherwise as a delta: the positions and
new values of the leaves that changed. The document is walked generically, so a field
the Snapshot gains is stored without this module naming it. A document whose shape
changed (a process came or went, a GPU was lost) is stored as a keyframe.

Leaves are compared by value and type (1, 1.0 and True are equal in Python, not here;
nor are 0.0 and -0.0).
"""

from __future__ import annotations

import json
import zlib
from typing import Any

# A frame body decompresses to at most this many bytes: a damaged or hostile file cannot
# make the reader allocate without bound (a real keyframe is tens of KiB).
MAX_FRAME_BYTES = 16 << 20

Ref = tuple[Any, Any]  # (container, key): where a leaf lives in a document


def _is_number(value: object) -> bool:
    return type(value) is int or type(value) is float


_NUMBER_TYPES = (int, float)


def _kind(value: object) -> int:
    """0 a leaf, 1 a record (dict), 2 a list of records, 3 a list of numbers (a host's
    per-CPU load: each member is a leaf of its own, so an unchanged one costs nothing)."""
    kind = type(value)
    if kind is dict:
        return 1
    if kind is list and value:
        first = type(value[0])  # type: ignore[index]
        if first is dict:
            return 2 if all(type(v) is dict for v in value) else 0  # type: ignore[attr-defined]
        if first is int or first is float:
            numbers = all(type(v) is int or type(v) is float for v in value)  # type: ignore[attr-defined]
            return 3 if numbers else 0
    return 0


def _walk(node: dict[str, Any], shape: list[object], values: list[object]) -> None:
    for key, value in node.items():
        shape.append(key)
        kind = _kind(value)
        if kind == 0:
            values.append(value)
        elif kind == 1:
            shape.append("{")
            _walk(value, shape, values)
            shape.append("}")
        elif kind == 2:
            shape.append(len(value))
            for item in value:
                _walk(item, shape, values)
        else:
            shape.append(-len(value))
            values += value


def flatten(document: dict[str, Any]) -> tuple[list[object], list[object]]:
    """The document's shape (its keys and record counts) and its leaf values, in walk order."""
    shape: list[object] = []
    values: list[object] = []
    _walk(document, shape, values)
    return shape, values


def _walk_refs(node: dict[str, Any], refs: list[Ref]) -> None:
    for key, value in node.items():
        kind = _kind(value)
        if kind == 0:
            refs.append((node, key))
        elif kind == 1:
            _walk_refs(value, refs)
        elif kind == 2:
            for item in value:
                _walk_refs(item, refs)
        else:
            refs += ((value, i) for i in range(len(value)))


def leaf_refs(document: dict[str, Any]) -> list[Ref]:
    """Where each leaf of `document` lives, in the order `flatten` lists their values."""
    refs: list[Ref] = []
    _walk_refs(document, refs)
    return refs


def _step(old: object, new: object) -> int | float | None:
    """`new - old` where adding it back gives `new` exactly, of `new`'s type, and is shorter
    to write (a counter, an uptime, a clock: the step repeats and compresses to little)."""
    if type(new) is int and type(old) is int:
        assert isinstance(new, int) and isinstance(old, int)  # for the type checker
        whole = new - old
        return whole if -abs(new) < whole * 10 < abs(new) else None  # a digit shorter
    if type(new) is not float or type(old) is not float:
        return None
    assert isinstance(new, float) and isinstance(old, float)
    step = new - old
    if old + step != new:
        return None
    return step if len(repr(step)) < len(repr(new)) else None


def changes(before: list[object], after: list[object]) -> list[list[object]]:
    """The delta from `before` to `after` (same shape): [set, add], each a list of
    [gap, value, gap, value, ...], a gap being the distance from that list's previous
    position (small numbers compress well); `set` puts a value, `add` adds a step."""
    put: list[object] = []
    add: list[object] = []
    last_put = last_add = -1
    for at, (old, new) in enumerate(zip(before, after, strict=True)):
        same = type(old) is type(new) and old == new
        # -0.0 == 0.0, yet it is another reading (and another JSON text): compared by repr.
        if same and (new or type(new) is not float or repr(old) == repr(new)):
            continue
        step = _step(old, new)
        if step is None:
            put += (at - last_put, new)
            last_put = at
        else:
            add += (at - last_add, step)
            last_add = at
    return [put, add]


def _check_pairs(refs: list[Ref], pairs: object) -> list[Any]:
    if not isinstance(pairs, list) or len(pairs) % 2:
        raise ValueError("a delta that is not a list of pairs")
    gaps = pairs[0::2]
    if not all(type(g) is int and g >= 1 for g in gaps):
        raise ValueError("a delta position that is not a positive integer")
    if sum(gaps) > len(refs):
        raise ValueError("a delta position past the document's end")
    return pairs


def apply(refs: list[Ref], delta: object) -> None:
    """Set the changed leaves of the document `refs` points into; ValueError for a delta
    that does not fit it (a damaged file)."""
    if not isinstance(delta, list) or len(delta) != 2:
        raise ValueError("a delta that is not [set, add]")
    put, add = _check_pairs(refs, delta[0]), _check_pairs(refs, delta[1])
    at = -1
    for i in range(0, len(put), 2):
        at += put[i]
        container, key = refs[at]
        container[key] = put[i + 1]
    at = -1
    for i in range(0, len(add), 2):
        at += add[i]
        container, key = refs[at]
        old, step = container[key], add[i + 1]
        if not (_is_number(step) and _is_number(old)):
            raise ValueError("a step added to what is not a number")
        container[key] = old + step


def pack(value: object) -> bytes:
    """JSON, compressed: a keyframe's document or a delta's list."""
    text = json.dumps(value, separators=(",", ":"), allow_nan=False)
    return zlib.compress(text.encode(), 6)


def _no_constant(name: str) -> object:
    raise ValueError(f"{name} is not a JSON number")


def unpack(body: bytes) -> Any:
    """`pack`'s inverse; ValueError for a body that is not one (bounded, see MAX_FRAME_BYTES)."""
    try:
        inflate = zlib.decompressobj()
        raw = inflate.decompress(body, MAX_FRAME_BYTES)
        if inflate.unconsumed_tail:
            raise ValueError("a frame larger than any gputui writes")
        return json.loads(raw, parse_constant=_no_constant)
    except (zlib.error, UnicodeDecodeError, RecursionError) as exc:
        raise ValueError(f"a frame that is not one: {exc}") from None
