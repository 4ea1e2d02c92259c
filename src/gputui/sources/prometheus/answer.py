"""An API answer read series by series, so that a bound on series costs nothing past it.

`json.loads` builds the whole document before anything can count it: an
answer of 1.3 million series (60 MiB, under the cap on a body) became 1.2 GiB
of dicts before the reader saw one. Here the envelope (`status`, `data`, ...)
is walked key by key, and the one list that holds series (`data.result`, or
`data.activeTargets` of /targets) is decoded one item at a time with
`JSONDecoder.raw_decode`: each item is checked and turned into the reader's
tuple at once (shapes.py), and the item past `limit` is refused before it is
decoded. Every other value is small in any answer the API sends and is
decoded whole, after shapes.nesting has bounded the depth of all of them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any, TypeVar

from gputui.sources.prometheus import shapes

T = TypeVar("T")
_WHITESPACE = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder(parse_int=shapes.bounded_int, parse_constant=shapes.no_constant)
_SERIES_LISTS = {"result", "activeTargets"}


class Broken(shapes.ShapeError):
    """Not JSON, or not the API's envelope (`status`, `data`): the server sent a broken answer."""


class TooManySeries(Exception):
    """The answer holds more than `limit` series; nothing past the limit was decoded."""

    def __init__(self, limit: int) -> None:
        super().__init__(limit)
        self.limit = limit


class _Walk:
    def __init__(self, text: str, item: Callable[[Any, str], Any], kind: str, limit: int) -> None:
        self.text = text
        self.kind = kind
        self.item = item
        self.limit = limit
        self.items: list[Any] = []

    def skip(self, i: int) -> int:
        found = _WHITESPACE.match(self.text, i)
        return found.end() if found else i

    def at(self, i: int) -> str:
        return self.text[i] if i < len(self.text) else ""

    def expect(self, i: int, char: str) -> int:
        i = self.skip(i)
        if self.at(i) != char:
            raise ValueError(f"expected {char!r} at char {i}")
        return i + 1

    def envelope(self, i: int, where: str) -> tuple[dict[str, Any], int]:
        """An object whose members are decoded whole, but for the series list."""
        out: dict[str, Any] = {}
        i = self.expect(i, "{")
        i = self.skip(i)
        if self.at(i) == "}":
            return out, i + 1
        while True:
            key, i = _DECODER.raw_decode(self.text, self.skip(i))
            if not isinstance(key, str):
                raise ValueError(f"a key that is not a string at char {i}")
            i = self.skip(self.expect(i, ":"))
            if where == "data" and key in _SERIES_LISTS:
                if self.at(i) != "[":  # never decoded: a dict or string here may be huge
                    raise shapes.ShapeError(f"data.{key} is not a list")
                if self.kind and "resultType" in out:  # a wrong type: its items are not read
                    shapes.result({**out, "result": []}, self.kind, [])
                self.items = []  # a repeated key: the last one counts, as for json.loads
                out[key], i = self.series(i, f"data.{key}")
            elif where == "" and key == "data" and self.at(i) == "{":
                out[key], i = self.envelope(i, "data")
            elif where == "" and key == "data" and self.at(i) == "[":
                raise Broken("data is not an object")  # never decoded: may be huge
            else:
                out[key], i = _DECODER.raw_decode(self.text, i)
            i = self.skip(i)
            if self.at(i) == "}":
                return out, i + 1
            i = self.expect(i, ",")

    def series(self, i: int, where: str) -> tuple[list[Any], int]:
        i = self.skip(i + 1)
        if self.at(i) == "]":
            return self.items, i + 1
        while True:
            if len(self.items) >= self.limit:
                raise TooManySeries(self.limit)
            value, i = _DECODER.raw_decode(self.text, self.skip(i))
            self.items.append(self.item(value, f"{where}[{len(self.items)}]"))
            i = self.skip(i)
            if self.at(i) == "]":
                return self.items, i + 1
            i = self.expect(i, ",")


def read(
    body: bytes, item: Callable[[Any, str], T], kind: str, limit: int
) -> tuple[dict[str, Any], list[T]]:
    """(`data`, the series list's items as `item(value, where)` made them); `kind`: the
    `resultType` expected ("" for /targets, which has none).

    Raises shapes.ApiError for an error answer, Broken for one that is not JSON or not the
    API's envelope (not UTF-8, too deep), shapes.ShapeError for a series of a wrong shape,
    TooManySeries past `limit`.
    """
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Broken(f"not UTF-8 (byte {exc.start})") from None
    depth = shapes.nesting(body)
    if depth > shapes.MAX_DEPTH:
        raise Broken(f"JSON nested {depth} deep (the bound is {shapes.MAX_DEPTH})")
    walk = _Walk(text, item, kind, limit)
    start = walk.skip(0)
    first = walk.at(start)
    if first != "{":
        if first and first in '["-0123456789tfn':
            raise Broken("the answer is not a JSON object")  # not decoded: it may be huge
        raise Broken(f"not JSON (expecting a value at char {start})")
    try:
        payload, end = walk.envelope(start, "")
        if walk.skip(end) != len(text):
            raise ValueError(f"extra data at char {walk.skip(end)}")
    except RecursionError:
        raise Broken(f"JSON nested over {shapes.MAX_DEPTH} deep") from None
    except ValueError as exc:  # json.JSONDecodeError and the walk's own
        raise Broken(f"not JSON ({shapes.clip(str(exc), 80)})") from None
    try:
        data = shapes.api_data(payload)
    except shapes.ApiError:
        raise
    except shapes.ShapeError as exc:
        raise Broken(exc.detail) from None
    if kind:
        shapes.result(data, kind, walk.items)
    return data, walk.items
