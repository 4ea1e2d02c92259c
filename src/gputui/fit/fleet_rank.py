"""A fleet ranking that follows the distinct (card, free memory) keys, not the GPUs.

A fit answer depends only on what estimate_key holds (fit/fleet.py), and a fleet of a
thousand hosts has a few dozen such keys: the engine runs once per key, and the GPUs
of a key are a list made once per command (`Targets`) that every model's ranking
shares. `Ranking` holds one answer per key in rank order and walks the GPUs only when
asked (the best few, or every GPU for --all); the report groups whole keys.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from itertools import groupby, islice
from typing import Any, Generic, TypeVar

from gputui.model.cluster import ClusterHost

T = TypeVar("T")
Member = tuple[ClusterHost, Any]  # (host, fit Target)


@dataclass(frozen=True, slots=True)
class KeyTargets:
    """The GPUs of one estimate key, in fleet order (host, GPU index, MIG instance)."""

    key: tuple[Any, ...]
    members: tuple[Member, ...]
    hosts: frozenset[str]

    @property
    def target(self) -> Any:
        """The first GPU's target: the one the engine is asked about for the whole key."""
        return self.members[0][1]


def place(pair: Member) -> tuple[str, int, int]:
    target = pair[1]
    return (pair[0].name, target.index, -1 if target.mig is None else int(target.mig.mig_index))


def key_targets(targets: list[Member], key: Callable[[Any], tuple[Any, ...]]) -> list[KeyTargets]:
    """`targets` grouped by `key(target)`, made once per command."""
    groups: dict[tuple[Any, ...], list[Member]] = {}
    for host, target in targets:
        groups.setdefault(key(target), []).append((host, target))
    out = []
    for k, members in groups.items():
        members.sort(key=place)
        out.append(KeyTargets(k, tuple(members), frozenset(h.name for h, _ in members)))
    return out


@dataclass(frozen=True, slots=True)
class KeyAnswer:
    """One key's answer and its rank order (the same for every GPU of the key)."""

    order: tuple[Any, ...]
    targets: KeyTargets
    answer: Any


class Ranking(Generic[T]):
    """Every GPU in rank order, from one answer per key: keys by `order`, the GPUs of keys
    that tie merged in fleet order. `make(host, target, answer)` is one GPU's row."""

    def __init__(self, answers: list[KeyAnswer], make: Callable[[ClusterHost, Any, Any], T]):
        self.answers = sorted(answers, key=lambda a: a.order)
        self.make = make
        self.total = sum(len(a.targets.members) for a in self.answers)

    def __len__(self) -> int:
        return self.total

    def __bool__(self) -> bool:
        return self.total > 0

    def __iter__(self) -> Iterator[T]:
        return self.rows()

    def rows(self, where: Callable[[KeyAnswer], bool] | None = None) -> Iterator[T]:
        """The GPUs' rows in rank order; `where`: only the keys it accepts."""
        make = self.make
        for _, tied in groupby(self.answers, key=lambda a: a.order):
            run = [a for a in tied if where is None or where(a)]
            if len(run) == 1:
                answer = run[0].answer
                for host, target in run[0].targets.members:
                    yield make(host, target, answer)
                continue
            merged = [(place(m), m, a.answer) for a in run for m in a.targets.members]
            merged.sort(key=lambda x: x[0])
            for _, (host, target), answer in merged:
                yield make(host, target, answer)

    def first(self, n: int | None) -> list[T]:
        """The best `n` rows (every row for None)."""
        return list(self.rows() if n is None else islice(self.rows(), n))
