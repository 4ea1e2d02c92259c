"""What a Prometheus HTTP API answer may look like, checked before anything reads it.

The reader used to trust the answer: `result` that was not a list, a `value`
of three items or a `metric` that was a string ended in a traceback, deep
JSON in a RecursionError, `"+Inf"` in an OverflowError further down. Every
answer now passes here first (the shapes of https://prometheus.io/docs/
prometheus/latest/querying/api/ as this client reads them): a wrong shape is
a `ShapeError` naming the field, which the client turns into one line naming
the query.

Numbers from outside are bounded here, once: sample values that are not
finite (`+Inf`, `-Inf`, `NaN`, `1e999`) or beyond ±VALUE_LIMIT become NaN,
which the cluster source shows as N/A; sample times outside 1970 .. 3058
become NaN too, so no later int() or localtime() can overflow.
"""

from __future__ import annotations

import json
import math
import re
from itertools import accumulate
from typing import Any

from gputui.core.textsafe import visible

MAX_DEPTH = 32  # an answer nests 6 deep; the rest is room for fields added later
MAX_INT_DIGITS = 30  # JSON integers in an answer are times; anything longer is not one
VALUE_LIMIT = 1e15  # past any GPU reading in gputui's units, well inside float's exact range
TIME_LIMIT = float(1 << 35)  # seconds since 1970: the year 3058

Labels = dict[str, str]
VectorItem = tuple[Labels, float, float]  # labels, time, value
MatrixItem = tuple[Labels, tuple[tuple[float, float], ...]]

_STRINGS = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')
_KEEP = b"[]{}"
_DROP = bytes(b for b in range(256) if b not in _KEEP)
_SIGNS = bytes.maketrans(b"[{]}", b"\x01\x01\xff\xff")
_NUMBER_CHARS = "0123456789.eE+-"
_SPECIAL = frozenset(("+Inf", "-Inf", "Inf", "NaN", "+inf", "-inf", "inf", "nan"))


class ShapeError(Exception):
    """The answer is not one the Prometheus API sends; `detail` names the field."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


class ApiError(Exception):
    """A well-formed `"status": "error"` answer; `message` is the server's, sanitised."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def clip(text: str, limit: int = 40) -> str:
    """Text from the answer (a message, a key) in an error line: sanitised and cut short."""
    text = visible(text)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def short(value: Any, limit: int = 40) -> str:
    """A value from the answer quoted in an error line, as Python would write it, cut short."""
    return clip(repr(value), limit)


def _deepest(text: bytes) -> int:
    brackets = text.translate(None, _DROP).translate(_SIGNS)
    return max(accumulate(memoryview(brackets).cast("b")), default=0)


def nesting(body: bytes, bound: int = MAX_DEPTH) -> int:
    """How deep arrays and objects nest, strings aside (UTF-8 keeps ASCII bytes ASCII).

    Counted over every bracket first, which is cheap; only past the bound are
    the strings taken out (a label may hold brackets) and the count redone.
    Closing brackets in strings can hide depth from the first count: then
    json's own recursion limit stops the parser, and `decode` says so.
    """
    depth = _deepest(body)
    return depth if depth <= bound else _deepest(_STRINGS.sub(b"", body))


def bounded_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise ShapeError(f"an integer of {len(text)} digits (the bound is {MAX_INT_DIGITS})")
    return int(text)


def no_constant(name: str) -> Any:
    raise ShapeError(f"{name} is not JSON")


def decode(body: bytes) -> Any:
    """The JSON document, or ShapeError: not UTF-8, not JSON, too deep, an endless integer."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ShapeError(f"not UTF-8 (byte {exc.start})") from None
    depth = nesting(body)
    if depth > MAX_DEPTH:
        raise ShapeError(f"JSON nested {depth} deep (the bound is {MAX_DEPTH})")
    try:
        return json.loads(text, parse_int=bounded_int, parse_constant=no_constant)
    except RecursionError:  # unbalanced brackets can fool the count above, not the parser
        raise ShapeError(f"JSON nested over {MAX_DEPTH} deep") from None
    except ValueError as exc:
        raise ShapeError(f"not JSON ({clip(str(exc), 80)})") from None


def api_data(payload: Any) -> dict[str, Any]:
    """`data` of a success answer; ApiError for an error answer; ShapeError otherwise."""
    if not isinstance(payload, dict):
        raise ShapeError("the answer is not a JSON object")
    status = payload.get("status")
    if status == "error":
        message = payload.get("error") or payload.get("errorType") or "request failed"
        raise ApiError(clip(str(message), 200))
    if status != "success":
        raise ShapeError(f'status is {short(status)}, not "success" or "error"')
    data = payload.get("data")
    if not isinstance(data, dict):
        raise ShapeError("data is not an object")
    return data


def _list(value: Any, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise ShapeError(f"{where} is not a list")
    return value


def _object(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ShapeError(f"{where} is not an object")
    return value


def labels(value: Any, where: str) -> Labels:
    if not isinstance(value, dict):
        raise ShapeError(f"{where} is not an object of labels")
    for key, text in value.items():
        if not isinstance(text, str):
            raise ShapeError(f"{where}.{clip(key)} is not a string")
    return dict(value)


def _time(value: Any) -> float:
    if type(value) is not float and type(value) is not int:  # bool is not a time
        raise ShapeError("[0] is not a number")
    t = float(value)
    return t if 0 <= t <= TIME_LIMIT else math.nan  # NaN and infinity fail the comparison


def sample_value(value: Any, where: str = "") -> float:
    """A sample's value string as a float; NaN for what is not a finite, bounded reading.

    A string of digits, signs, dots and exponents that float() takes is a
    decimal number; float() alone would also take "1_000", " 5" or "infinity".
    Called once per sample point, so kept to a few C calls (and error
    messages are put together only for an error).
    """
    if type(value) is not str:
        raise ShapeError(f"{where} is not a string")
    if not value.strip(_NUMBER_CHARS):
        try:
            v = float(value)
        except ValueError:
            raise ShapeError(f"{where} {short(value)} is not a number") from None
        return v if -VALUE_LIMIT <= v <= VALUE_LIMIT else math.nan
    if value in _SPECIAL:
        return math.nan
    raise ShapeError(f"{where} {short(value)} is not a number")


def _pair(value: Any) -> tuple[float, float]:
    """[time, "value"]; a ShapeError's detail is relative to the pair ("[1] is not ...")."""
    if type(value) is not list or len(value) != 2:
        raise ShapeError(' is not [time, "value"]')
    return _time(value[0]), sample_value(value[1], "[1]")


def _pair_at(value: Any, where: str) -> tuple[float, float]:
    try:
        return _pair(value)
    except ShapeError as exc:
        raise ShapeError(where + exc.detail) from None


def result(data: dict[str, Any], kind: str, items: list[Any]) -> None:
    """The answer's `resultType` is `kind` and its `result` a list (read as `items`)."""
    got = data.get("resultType")
    if got != kind:
        raise ShapeError(f"resultType is {short(got)}, expected {kind!r}")
    if "result" not in data:
        raise ShapeError("data.result is not a list")


def vector_item(value: Any, where: str) -> VectorItem:
    """One series of an instant query; a native histogram sample (no `value`) is missing."""
    item = _object(value, where)
    metric = labels(item.get("metric", {}), f"{where}.metric")
    if "value" not in item and "histogram" in item:
        return (metric, math.nan, math.nan)
    t, v = _pair_at(item.get("value"), f"{where}.value")
    return (metric, t, v)


def matrix_item(value: Any, where: str) -> MatrixItem:
    """One series of a range query (native histogram points are left out)."""
    item = _object(value, where)
    metric = labels(item.get("metric", {}), f"{where}.metric")
    values = _list(item.get("values", []), f"{where}.values")
    try:
        points = tuple(map(_pair, values))
    except ShapeError:  # which point: looked for only now
        for j, p in enumerate(values):
            _pair_at(p, f"{where}.values[{j}]")
        raise
    return (metric, points)


def target_item(value: Any, where: str) -> tuple[Labels, str]:
    """(labels, scrapeInterval) of one active target of /api/v1/targets."""
    target = _object(value, where)
    interval = target.get("scrapeInterval", "")
    if not isinstance(interval, str):
        raise ShapeError(f"{where}.scrapeInterval is not a string")
    return (labels(target.get("labels", {}), f"{where}.labels"), interval)
