"""Hypothesis strategies for whole Snapshots: every record, every field, None or a value.

Built from the records' evaluated annotations (as the source contract suite reads
them), not from the decoder's own reading of them, so a decoder that misreads an
annotation fails the round trip. Values stay inside what the decoder accepts (its
bounds, visible text); hostile documents are tests/fuzz/'s job.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from typing import Any

from hypothesis import strategies as st

import gputui.model.snapshot as model
from gputui.core.textsafe import is_visible
from gputui.model.snapshot_decode import FLOAT_MAX, INT_MAX, PERCENT_FIELDS

# Text the decoder keeps as it is: no control characters, line separators or bidi marks
# (core/textsafe.py's unsafe class); every other character, non-ASCII included.
SAFE_CHARACTERS = st.characters(
    exclude_categories=("Cc", "Cs", "Zl", "Zp"),
    exclude_characters="\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\ufeff",
)
TEXT = st.text(SAFE_CHARACTERS, max_size=12).filter(is_visible)
PROCESS_TYPES = st.sampled_from(["compute", "graphics", "mps", "compute+graphics"])
# Edges on purpose: 0 (never None), the bounds, and floats that print long.
INTS = st.one_of(st.sampled_from([0, 1, INT_MAX]), st.integers(0, INT_MAX))
FLOATS = st.one_of(
    st.sampled_from([0.0, -0.0, 0.1, FLOAT_MAX, -FLOAT_MAX, 5e-324]),
    st.floats(-FLOAT_MAX, FLOAT_MAX, allow_nan=False, allow_infinity=False),
)
PERCENTS = st.one_of(st.sampled_from([0, 100, 0.0, 100.0]), st.floats(0, 100))


def _hints(cls: type) -> dict[str, Any]:
    fields = {f.name: f.type for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    return {n: eval(t, vars(model)) if isinstance(t, str) else t for n, t in fields.items()}


def _value(hint: Any, field: str) -> st.SearchStrategy[Any]:
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        return st.one_of(*(_value(h, field) for h in typing.get_args(hint)))
    if hint is type(None):
        return st.none()
    if origin is tuple:
        args = typing.get_args(hint)
        if len(args) == 2 and args[1] is Ellipsis:
            return st.lists(_value(args[0], field), max_size=4).map(tuple)
        return st.tuples(*(_value(a, field) for a in args))
    if origin is frozenset:
        return st.frozensets(_value(typing.get_args(hint)[0], field), max_size=4)
    if hint is bool:
        return st.booleans()
    if field in PERCENT_FIELDS:
        return PERCENTS if hint is float else st.integers(0, 100)
    if hint is int:
        return INTS
    if hint is float:
        return FLOATS
    if hint is str:
        if field == "type":
            return PROCESS_TYPES
        if field == "compute_mode":
            return st.sampled_from(model.COMPUTE_MODES)
        if field == "kind":
            return st.sampled_from(model.EVENT_KINDS)
        return TEXT
    if isinstance(hint, type) and hasattr(hint, "__record_fields__"):
        return record(hint)
    raise AssertionError(f"{field}: no strategy for {hint!r}")


def record(cls: type) -> st.SearchStrategy[Any]:
    """Any record of `cls`, each field drawn from its annotation."""
    return st.builds(cls, **{n: _value(h, n) for n, h in _hints(cls).items()})


SNAPSHOTS = st.deferred(lambda: record(model.Snapshot))
