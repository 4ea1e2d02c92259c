"""Opening the cluster source for a command: the checks and the one-line errors that
`snapshot`, `fit` and the cluster view share for `--prometheus URL [--match SELECTOR]`.

A bad URL or selector is the user's (exit 2), an unreachable server is not (exit 1):
each becomes a UserError, which the CLI prints as one line.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from gputui.core.errors import UserError
from gputui.core.textsafe import visible
from gputui.model.cluster import ClusterSnapshot, MigReadings
from gputui.sources.prometheus.api import (
    DEFAULT_DEADLINE_S,
    CommandDeadline,
    PrometheusRequestError,
    PrometheusUnreachable,
)
from gputui.sources.prometheus.source import PrometheusSource

T = TypeVar("T")


def check_cluster_args(args: Any, conflicts: Mapping[str, str]) -> None:
    """--match only with --prometheus; options that pick a local source do not mix with it."""
    if getattr(args, "prometheus", None) is None:
        raise UserError("--match: only with --prometheus URL")
    for attr, flag in conflicts.items():
        value = getattr(args, attr, None)
        if value not in (None, False, "auto"):
            raise UserError(f"{flag}: not with --prometheus (the cluster comes from Prometheus)")


def _or_fail(call: Callable[[], T]) -> T:
    try:
        return call()
    except PrometheusRequestError as exc:
        raise UserError(exc.reason) from None
    except PrometheusUnreachable as exc:
        raise UserError(exc.reason, exit_code=1) from None


MAX_DEADLINE_S = 3600.0


def command_deadline(text: str | None) -> CommandDeadline:
    """`--deadline SECONDS`, started now: every query of the command ends within it."""
    if text is None:
        return CommandDeadline(DEFAULT_DEADLINE_S)
    try:
        seconds = float(text)
    except ValueError:
        raise UserError(f"--deadline {visible(text[:40])!r}: expected seconds, e.g. 30") from None
    if not 1.0 <= seconds <= MAX_DEADLINE_S:
        raise UserError(f"--deadline: {seconds:g} s is out of range (1 to {MAX_DEADLINE_S:g})")
    return CommandDeadline(seconds)


def open_cluster_source(
    url: str,
    match: str | None,
    metrics: Sequence[str] | None = None,
    deadline: CommandDeadline | None = None,
) -> PrometheusSource:
    """A checked PrometheusSource, or UserError: 2 for a bad URL/selector, 1 unreachable.
    `deadline`: a command's (command_deadline); the cluster view has none, each of its
    queries having its own."""

    def opened() -> PrometheusSource:
        source = PrometheusSource(url, match=match, metrics=metrics, deadline=deadline)
        source.check()
        return source

    return _or_fail(opened)


def poll_or_fail(source: PrometheusSource) -> ClusterSnapshot:
    """One refresh of the fleet, or UserError as for open_cluster_source."""
    return _or_fail(source.poll_cluster)


def read_mig_or_fail(source: PrometheusSource, at: float) -> MigReadings:
    """The fleet's MIG instances (mig.py), or UserError as for open_cluster_source."""
    from gputui.sources.prometheus.mig import read_mig

    return _or_fail(lambda: read_mig(source, at))
