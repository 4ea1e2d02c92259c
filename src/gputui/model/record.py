"""`@record`: frozen, slotted value classes, like `@dataclass(frozen=True, slots=True)`, cheaper.

Why not dataclasses: `gputui snapshot` runs once and exits (people run it in
loops), and its budget is set against the bare `import pynvml; nvmlInit()`.
`import dataclasses` pulls in `inspect` (and with it ast, dis, tokenize,
linecache): ~20 ms of CPU, and decorating the seven snapshot classes took
~18 ms more (each class's __init__, __repr__, __eq__, __hash__,
__setattr__, __delattr__, __getstate__ and __setstate__ compiled from
generated source, and the class built twice for its slots). That was two
thirds of what the one-shot cost above the floor.

What a record class gets (what the snapshot types' users rely on):
- `__slots__` (no `__dict__`), built once, from the annotations in class order;
- `__init__` with the same signature a dataclass gets (positional or keyword,
  defaults from the class body), compiled from generated source as a
  dataclass's is, but only the signature: the values are stored by one shared
  loop;
- frozen: assigning or deleting an attribute raises `FrozenRecordError`
  (an AttributeError, as dataclasses' FrozenInstanceError is);
- `__eq__` and `__hash__` over the field values in order (generated, as a
  dataclass's, but on their first call: a one-shot never compares records),
  `__repr__` as `Name(a=1, b='x')`, `__match_args__`, pickling and `copy`;
- `replace(obj, **changes)` and `field_names(cls)` here, without dataclasses;
- and still `dataclasses.replace`, `fields`, `asdict` and `is_dataclass`:
  `__dataclass_fields__` is built on first use, from a twin dataclass with
  the same fields, so code that treats these as dataclasses keeps working and
  pays for the dataclasses module only when it uses it.
Defaults must be immutable (None, numbers, strings, tuples, frozensets): a
record has no `default_factory`. Records do not inherit from one another.

mypy sees the decorator as `typing.dataclass_transform` (PEP 681): it checks
constructor calls and frozen assignments as for a frozen dataclass.
"""

from __future__ import annotations

from operator import attrgetter

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (see sources/base.py)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TypeVar

    from typing_extensions import dataclass_transform

    T = TypeVar("T")
else:

    def dataclass_transform(**_kwargs: object) -> object:
        return lambda decorated: decorated


# The attribute holding a record class's field names, in order.
FIELDS_ATTR = "__record_fields__"
_IMMUTABLE_DEFAULTS = (type(None), bool, int, float, complex, str, bytes, tuple, frozenset)


class FrozenRecordError(AttributeError):
    """An attempt to assign to (or delete) a field of a record, which is frozen."""


def _frozen_setattr(self: object, name: str, value: object) -> None:
    raise FrozenRecordError(f"cannot assign to field {name!r}")


def _frozen_delattr(self: object, name: str) -> None:
    raise FrozenRecordError(f"cannot delete field {name!r}")


class _DataclassFields:
    """`__dataclass_fields__` / `__dataclass_params__`, built when first asked for.

    Only the dataclasses module asks (replace, fields, asdict, is_dataclass). The
    Field objects come from a real dataclass with the same names, annotations and
    defaults, so they are exactly what dataclasses expects; both attributes are
    then stored on the record class, replacing this descriptor.
    """

    def __init__(self, attr: str) -> None:
        self._attr = attr

    def __get__(self, obj: object, cls: type) -> Any:
        import dataclasses

        names: tuple[str, ...] = getattr(cls, FIELDS_ATTR)
        defaults: dict[str, object] = cls.__record_defaults__  # type: ignore[attr-defined]
        namespace: dict[str, object] = {
            "__module__": cls.__module__,
            "__qualname__": cls.__qualname__,
            "__annotations__": {n: cls.__record_annotations__[n] for n in names},  # type: ignore[attr-defined]
            **defaults,
        }
        twin: Any = dataclasses.dataclass(frozen=True)(type(cls.__name__, (), namespace))
        type.__setattr__(cls, "__dataclass_fields__", twin.__dataclass_fields__)
        type.__setattr__(cls, "__dataclass_params__", twin.__dataclass_params__)
        return getattr(cls, self._attr)


def _init_source(names: tuple[str, ...], defaults: dict[str, object]) -> str:
    """`def __init__(self, a, b=_d_b): _fill(self, (a, b))`: the signature is what needs
    compiling; storing the values is one shared loop (half the compile time of a
    statement per field, the same speed per call)."""
    params = ", ".join(f"{n}=_d_{n}" if n in defaults else n for n in names)
    values = "".join(f"{n}, " for n in names)
    return f"def __init__(self, {params}):\n    _fill(self, ({values}))\n"


def _filler(cls: type, names: tuple[str, ...]) -> Callable[[object, tuple[object, ...]], None]:
    """Stores a tuple of values in `cls`'s slots, through the slot descriptors themselves
    (the class's own __setattr__ refuses: records are frozen)."""
    setters = tuple(getattr(cls, n).__set__ for n in names)

    def fill(obj: object, values: tuple[object, ...]) -> None:
        for store, value in zip(setters, values):  # noqa: B905 - same length by construction
            store(obj, value)

    return fill


def _values_getter(names: tuple[str, ...]) -> Callable[[object], tuple[object, ...]]:
    """A function from a record to its field values as one tuple (attrgetter, in C)."""
    if len(names) > 1:
        getter: Callable[[object], tuple[object, ...]] = attrgetter(*names)
        return getter
    if names:
        one = attrgetter(names[0])
        return lambda obj: (one(obj),)
    return lambda obj: ()


def _eq_hash_source(names: tuple[str, ...]) -> str:
    """__eq__ and __hash__ as a dataclass has them: attribute reads the interpreter
    specialises for slots, ~2x faster per call than going through attrgetter."""
    mine = "".join(f"self.{n}, " for n in names)
    theirs = "".join(f"other.{n}, " for n in names)
    return (
        "def __eq__(self, other):\n"
        "    if other.__class__ is self.__class__:\n"
        f"        return ({mine}) == ({theirs})\n"
        "    return NotImplemented\n"
        "def __hash__(self):\n"
        f"    return hash(({mine}))\n"
    )


def _compiled_on_first_use(holder: list[type], name: str, names: tuple[str, ...]) -> Any:
    """A stand-in for the generated `name` (__eq__ or __hash__) that compiles both on its
    first call and puts them on the class: a one-shot `gputui snapshot` compares and hashes
    no records, so it pays nothing for them; the dashboard pays once."""

    def first_use(self: object, *args: object) -> object:
        cls = holder[0]
        scope: dict[str, Any] = {"__name__": cls.__module__}
        exec(_eq_hash_source(names), scope)  # noqa: S102 - built from our own field names
        for method in ("__eq__", "__hash__"):
            scope[method].__qualname__ = f"{cls.__qualname__}.{method}"
            type.__setattr__(cls, method, scope[method])
        return scope[name](self, *args)

    first_use.__name__ = name
    return first_use


def _methods(
    holder: list[type], names: tuple[str, ...], values: Callable[[object], tuple[object, ...]]
) -> dict[str, object]:
    """__eq__, __hash__ (generated on first use), __repr__ and pickling."""

    def __repr__(self: object) -> str:
        shown = ", ".join(f"{n}={v!r}" for n, v in zip(names, values(self), strict=True))
        return f"{type(self).__qualname__}({shown})"

    def __reduce__(self: object) -> tuple[type, tuple[object, ...]]:
        return (type(self), tuple(values(self)))

    return {
        "__eq__": _compiled_on_first_use(holder, "__eq__", names),
        "__hash__": _compiled_on_first_use(holder, "__hash__", names),
        "__repr__": __repr__,
        "__reduce__": __reduce__,
    }


@dataclass_transform(frozen_default=True, eq_default=True)
def record(cls: type[T]) -> type[T]:
    """The record class of `cls` (see the module docstring): a new class, as slots require."""
    if cls.__bases__ != (object,):
        raise TypeError(f"@record {cls.__name__}: records do not inherit")
    body = dict(cls.__dict__)
    annotations: dict[str, object] = body.pop("__annotations__", {})
    names = tuple(annotations)
    defaults: dict[str, object] = {}
    for n in names:
        if n in body:
            value = body.pop(n)
            if not isinstance(value, _IMMUTABLE_DEFAULTS):
                raise TypeError(f"@record {cls.__name__}.{n}: default {value!r} is mutable")
            defaults[n] = value
        elif defaults:
            raise TypeError(f"@record {cls.__name__}.{n}: a field without default follows one with")
    for key in ("__dict__", "__weakref__"):
        body.pop(key, None)
    values = _values_getter(names)
    holder: list[type] = []  # the class, once built, for the methods generated on first use
    body.update(_methods(holder, names, values))
    body.update(
        __qualname__=cls.__qualname__,
        __slots__=names,
        __match_args__=names,
        __setattr__=_frozen_setattr,
        __delattr__=_frozen_delattr,
        __record_values__=values,
        __record_index__={n: i for i, n in enumerate(names)},
        __record_defaults__=defaults,
        __record_annotations__=annotations,
        __dataclass_fields__=_DataclassFields("__dataclass_fields__"),
        __dataclass_params__=_DataclassFields("__dataclass_params__"),
    )
    body[FIELDS_ATTR] = names
    new: type[T] = type(cls.__name__, (), body)
    holder.append(new)
    scope: dict[str, object] = {"__name__": cls.__module__, "_fill": _filler(new, names)}
    scope.update({f"_d_{n}": v for n, v in defaults.items()})
    exec(_init_source(names, defaults), scope)  # noqa: S102 - built from our own field names
    init: Any = scope["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__annotations__ = {**annotations, "return": None}  # as a dataclass's, for inspect
    type.__setattr__(new, "__init__", init)
    return new


def field_names(cls_or_obj: object) -> tuple[str, ...]:
    """A record's field names, in order (dataclasses.fields without the dataclasses import)."""
    names: tuple[str, ...] = getattr(cls_or_obj, FIELDS_ATTR)
    return names


def replace(obj: T, /, **changes: Any) -> T:
    """A copy of record `obj` with `changes` applied (dataclasses.replace, for records).

    The values are passed by position (a list of the old ones, the changes written in),
    which is what makes this cheaper than dataclasses.replace: `enrich` replaces every
    GPU process on every poll. An unknown name is a TypeError, as there.
    """
    cls: Any = type(obj)
    values = list(cls.__record_values__(obj))
    index: dict[str, int] = cls.__record_index__
    for name, value in changes.items():
        i = index.get(name)
        if i is None:
            raise TypeError(
                f"{cls.__qualname__}.__init__() got an unexpected keyword argument {name!r}"
            )
        values[i] = value
    new: T = cls(*values)
    return new
