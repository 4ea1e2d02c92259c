"""Validation of catalog entries with pydantic, built from the plain classes' own annotations.

`gputui.catalog.models` declares each field once, with its bounds (`Bounds`); here a
pydantic model with the same fields, order, defaults and bounds (each `Bounds` as
pydantic's `Field(gt=, ge=, le=)`) is made from that declaration, so the two cannot drift apart and the error messages are pydantic's
(the loader turns them into one line naming the file, line and field). Imported only
to validate: loading a catalog that was validated before (the cache) never gets here,
so the dashboard does not load pydantic.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from typing import Annotated, Any, TypeVar, Union

from pydantic import BaseModel, ConfigDict, Field, create_model, model_validator

from gputui.catalog.bounds import Bounds

T = TypeVar("T")

# extra="forbid": a misspelt field is an error, not ignored; allow_inf_nan=False: a
# mutated figure never reaches the JSON output as NaN or Infinity.
_CONFIG = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


def _whole_record_check(cls: type[Any]) -> Any:
    """The class's whole-record check as a pydantic validator, or None without one.

    A catalog class may define `derived_problem(self) -> str | None` (Card does); its
    message names the field ("derived: ..."). Read by name so this module needs no class
    of models.py, which imports it."""
    problem_of = getattr(cls, "derived_problem", None)
    if problem_of is None:
        return None

    def check(model: Any) -> Any:
        problem = problem_of(model)
        if problem is not None:
            raise ValueError(problem)
        return model

    return check


_MODELS: dict[type[Any], type[BaseModel]] = {}


def _constrained(hint: Any) -> Any:
    """`hint` with every `Bounds` in it (also inside `X | None`) as pydantic's Field."""
    origin = typing.get_origin(hint)
    if origin is Annotated:
        base, *extras = typing.get_args(hint)
        marks = [Field(gt=m.gt, ge=m.ge, le=m.le) if isinstance(m, Bounds) else m for m in extras]
        args = (_constrained(base), *marks)
        return _ANNOTATED[args]
    if origin in (Union, types.UnionType):
        return _UNION[tuple(_constrained(arg) for arg in typing.get_args(hint))]
    return hint


# Subscripted with argument tuples built at run time (not type expressions).
_ANNOTATED: Any = Annotated
_UNION: Any = Union


def model_for(cls: type[Any]) -> type[BaseModel]:
    """The pydantic model of a catalog dataclass: same fields, order, defaults and bounds."""
    known = _MODELS.get(cls)
    if known is not None:
        return known
    hints = {
        name: _constrained(hint)
        for name, hint in typing.get_type_hints(cls, include_extras=True).items()
    }
    fields: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if f.default_factory is not dataclasses.MISSING:
            fields[f.name] = (hints[f.name], Field(default_factory=f.default_factory))
        elif f.default is not dataclasses.MISSING:
            fields[f.name] = (hints[f.name], f.default)
        else:
            fields[f.name] = (hints[f.name], ...)
    validators: dict[str, Any] = {}
    check = _whole_record_check(cls)
    if check is not None:
        validators["whole_record"] = model_validator(mode="after")(check)
    model: type[BaseModel] = create_model(
        cls.__name__, __config__=_CONFIG, __validators__=validators, **fields
    )
    _MODELS[cls] = model
    return model


def validate(cls: type[T], data: Mapping[str, Any]) -> T:
    """`data` checked and converted as pydantic would; raises pydantic.ValidationError."""
    checked = model_for(cls).model_validate(data)
    return cls(**{name: getattr(checked, name) for name in checked.__class__.model_fields})
