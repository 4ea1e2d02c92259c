"""A small client for Prometheus' HTTP API: /api/v1/query, /api/v1/query_range, /api/v1/targets.

The standard library's urllib rather than httpx: the reader makes a handful
of GET requests per refresh and parses JSON, which urllib does with no new
dependency (httpx would bring httpcore, h11, anyio, certifi, idna and sniffio
to every install for this). The price is one connection per request, a few
hundred microseconds on a LAN, and no HTTP/2, which Prometheus' API does not
need.

Errors are split by what the user can do about them:
- `PrometheusRequestError`: the URL or the selector is wrong (no such API,
  HTTP 400 bad_data): `gputui` prints one line and exits 2.
- `PrometheusBadResponse` (a request error too): the server answered, but
  not as the API does: broken HTTP, not JSON, a wrong shape, a body over
  the cap (prometheus_shapes.py checks the shapes).
- `PrometheusUnreachable`: connection refused, the deadline passed, 5xx: the
  views keep the last data and retry with back-off.

`timeout` is a deadline for the whole exchange of one query (connect, headers
and body, redirects), not a socket timeout that restarts at every byte
(http.py, which holds the policy every request follows: deadlines, caps,
redirects, credentials). A `CommandDeadline` bounds all the queries of one
command together. Series are bounded per answer and per command (or per
refresh of a view, `reset_series`), and counted while the answer is read
(answer.py): past the bound, the error names it and `--match`.

A query whose URL would be long (the cluster view names up to 200 hosts) is
sent by POST, form-encoded, as the HTTP API allows for /query and
/query_range: proxies and Prometheus itself refuse URLs of a megabyte.
"""

from __future__ import annotations

import base64
import contextlib
import threading
import time
import urllib.error
import urllib.parse
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

from gputui.core.textsafe import visible
from gputui.sources.prometheus import answer as answers
from gputui.sources.prometheus import endpoint, shapes
from gputui.sources.prometheus import http as prometheus_http

DEFAULT_TIMEOUT_S = 5.0  # the deadline of one query, all of it
DEFAULT_DEADLINE_S = 60.0  # the deadline of a whole command's queries (--deadline)
MAX_SCRAPE_INTERVAL_S = 86400.0  # a longer one from /targets is not believed: the default applies
# 1,000 hosts of 8 GPUs with 4 processes each answer 64,000 series to the largest query and
# about 170,000 to a whole `snapshot`; a series costs the reader about 1 KiB.
MAX_SERIES_PER_ANSWER = 200_000
MAX_SERIES_PER_COMMAND = 600_000
MAX_GET_URL = 4096  # longer queries go by POST (nginx's default buffer is 8 KiB)
NARROW = "narrow it with --match, e.g. --match 'Hostname=~\"gpu-0.*\"'"
_POSTABLE = ("/api/v1/query", "/api/v1/query_range")
_T = TypeVar("_T")


class PrometheusError(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class PrometheusRequestError(PrometheusError):
    """The request itself is wrong: bad URL, not a Prometheus server, bad selector."""


class PrometheusBadResponse(PrometheusRequestError):
    """The server answered with something the Prometheus API does not send."""


class PrometheusTooLarge(PrometheusBadResponse):
    """More series than the bound: the user narrows the selection (--match)."""


class PrometheusUnreachable(PrometheusError):
    """The server did not answer usefully this time; worth retrying."""


class CommandDeadline:
    """One deadline for every query of a command; `clock` is injectable for tests."""

    def __init__(self, seconds: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.seconds = seconds
        self._clock = clock
        self._end = clock() + seconds

    def left(self) -> float:
        return self._end - self._clock()


@dataclass(frozen=True, slots=True)
class Sample:
    labels: dict[str, str]
    timestamp: float
    value: float  # NaN when missing, not finite or out of bounds (prometheus_shapes.py)


@dataclass(frozen=True, slots=True)
class RangeSeries:
    labels: dict[str, str]
    points: tuple[tuple[float, float], ...]


def check_url(url: str) -> str:
    """The base URL (credentials left out); PrometheusRequestError naming it if unusable."""
    return _parse(url).base


def _parse(url: str) -> endpoint.Endpoint:
    try:
        return endpoint.parse(url)
    except endpoint.BadUrl as exc:
        raise PrometheusRequestError(
            f"--prometheus {shapes.short(url, 120)}: {exc.reason}"
        ) from None


class PrometheusClient:
    """Blocking, safe to share between threads; one instance per view. `requests` counts
    HTTP requests made (benchmarks)."""

    def __init__(
        self,
        url: str,
        *,
        timeout: float | None = None,  # None: DEFAULT_TIMEOUT_S as it is when called
        max_body: int = prometheus_http.MAX_BODY_BYTES,
        deadline: CommandDeadline | None = None,
        max_series: int | None = None,  # None: MAX_SERIES_PER_ANSWER
        max_series_total: int | None = None,  # None: MAX_SERIES_PER_COMMAND
    ) -> None:
        self.endpoint = _parse(url)
        self._auth: str | None = None
        if self.endpoint.username is not None:
            creds = f"{self.endpoint.username}:{self.endpoint.password or ''}"
            self._auth = "Basic " + base64.b64encode(creds.encode()).decode()
        self.url = self.endpoint.base
        self.timeout = DEFAULT_TIMEOUT_S if timeout is None else timeout
        self.max_body = max_body
        self.deadline = deadline
        self.max_series = MAX_SERIES_PER_ANSWER if max_series is None else max_series
        self.max_series_total = (
            MAX_SERIES_PER_COMMAND if max_series_total is None else max_series_total
        )
        self.requests = 0
        self.series = 0  # read since the last reset_series()
        self._in_flight = 0
        self._sharing = 1  # queries run side by side (side_by_side)
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def side_by_side(self, queries: int) -> Iterator[None]:
        """Queries sent inside run up to `queries` at once: each gets that many times the
        deadline per query from the start (the first sent is slowed by those that follow)."""
        with self._lock:
            self._sharing = queries
        try:
            yield
        finally:
            with self._lock:
                self._sharing = 1

    def reset_series(self) -> None:
        """A view's next refresh: the bound per command counts again from zero."""
        with self._lock:
            self.series = 0

    # --- the API ------------------------------------------------------------------
    def query(self, expr: str, at: float | None = None) -> list[Sample]:
        params = {"query": expr}
        if at is not None:
            params["time"] = f"{at:.3f}"
        items = self._series("/api/v1/query", params, shapes.vector_item, "vector")
        return [Sample(labels, t, v) for labels, t, v in items]

    def query_range(self, expr: str, start: float, end: float, step: float) -> list[RangeSeries]:
        params = {"query": expr, "start": f"{start:.3f}", "end": f"{end:.3f}", "step": f"{step:g}"}
        items = self._series("/api/v1/query_range", params, shapes.matrix_item, "matrix")
        return [RangeSeries(labels, points) for labels, points in items]

    def scrape_intervals(self) -> dict[str, float]:
        """Seconds between scrapes per `instance`, from /api/v1/targets (Prometheus >= 2.4x)."""
        params = {"state": "active"}
        out: dict[str, float] = {}
        for labels, interval in self._series("/api/v1/targets", params, shapes.target_item, ""):
            instance = labels.get("instance")
            seconds = parse_duration(interval)
            if instance and seconds and seconds <= MAX_SCRAPE_INTERVAL_S:
                out[instance] = seconds
        return out

    # --- transport ----------------------------------------------------------------
    def _what(self, path: str, params: dict[str, str]) -> str:
        """The query as error lines name it (a long one cut short)."""
        query = params.get("query")
        return f"{self.url}{path}" + (f" (query {shapes.clip(query, 200)})" if query else "")

    def _series(
        self,
        path: str,
        params: dict[str, str],
        item: Callable[[Any, str], _T],
        kind: str,
    ) -> list[_T]:
        """The answer's series, at most the bounds per answer and per command."""
        with self._lock:
            left = self.max_series_total - self.series
        limit = max(0, min(self.max_series, left))
        body = self._get(path, params)
        what = self._what(path, params)
        try:
            items = answers.read(body, item, kind, limit)[1]
        except shapes.ApiError as exc:
            raise PrometheusRequestError(f"{what}: {exc.message}") from None
        except answers.Broken as exc:
            raise PrometheusBadResponse(
                f"{what}: the server sent a broken response: {exc.detail}"
            ) from None
        except shapes.ShapeError as exc:
            raise PrometheusBadResponse(
                f"{what}: not a Prometheus API answer: {exc.detail}"
            ) from None
        except answers.TooManySeries:
            if limit < self.max_series:
                raise self._over_command() from None
            raise PrometheusTooLarge(
                f"{what}: over {self.max_series:,} series in one answer (the bound per "
                f"answer); {NARROW}"
            ) from None
        with self._lock:  # answers read side by side each saw what was left before them
            self.series += len(items)
            over = self.series > self.max_series_total
        if over:
            raise self._over_command()
        return items

    def _over_command(self) -> PrometheusTooLarge:
        return PrometheusTooLarge(
            f"{self.url}: over {self.max_series_total:,} series in one command (the bound per "
            f"command); {NARROW}"
        )

    def _budget(self, what: str, sharing: int) -> tuple[float, bool]:
        """The seconds this request may take, and whether the command's deadline set them.

        A query sent while `sharing` - 1 others are in flight gets `sharing` times the
        deadline per query: a busy Prometheus answers k queries at once about k times
        slower, and the command's deadline still bounds them all together.
        """
        own = self.timeout * sharing
        if self.deadline is None:
            return own, False
        left = self.deadline.left()
        if left <= 0:
            raise PrometheusUnreachable(self._late(what))
        return (left, True) if left < own else (own, False)

    def _late(self, what: str) -> str:
        seconds = self.deadline.seconds if self.deadline is not None else 0.0
        return f"{what}: the command's deadline of {seconds:g} s passed (--deadline SECONDS)"

    def _request(self, path: str, params: dict[str, str]) -> prometheus_http.Request:
        encoded = urllib.parse.urlencode(params)
        url = f"{self.url}{path}"
        origin = (self.endpoint.origin, self.endpoint.origin_text())
        if path in _POSTABLE and len(url) + 1 + len(encoded) > MAX_GET_URL:
            return prometheus_http.Request(
                "POST", url, *origin, body=encoded.encode("ascii"), credentials=self._auth
            )
        return prometheus_http.Request("GET", f"{url}?{encoded}", *origin, credentials=self._auth)

    def _get(self, path: str, params: dict[str, str]) -> bytes:
        """The body of a 2xx answer; every other outcome a PrometheusError naming the query."""
        what = self._what(path, params)
        with self._lock:
            self._in_flight += 1
            sharing = max(self._in_flight, self._sharing)
        try:
            return self._exchange(path, params, what, sharing)
        finally:
            with self._lock:
                self._in_flight -= 1

    def _exchange(self, path: str, params: dict[str, str], what: str, sharing: int) -> bytes:
        seconds, by_command = self._budget(what, sharing)
        with self._lock:
            self.requests += 1
        try:
            answer = prometheus_http.fetch(self._request(path, params), seconds, self.max_body)
        except prometheus_http.DeadlinePassed:
            if by_command:
                raise PrometheusUnreachable(self._late(what)) from None
            shared = f", {sharing} queries at once" if sharing > 1 else ""
            raise PrometheusUnreachable(
                f"{what}: no complete answer within {seconds:g} s (the deadline per query{shared})"
            ) from None
        except prometheus_http.BodyTooLarge as exc:
            raise PrometheusBadResponse(
                f"{what}: the answer is over {_size(int(exc.args[0]))} (the cap on an answer)"
            ) from None
        except prometheus_http.BrokenHttp as exc:
            raise PrometheusBadResponse(
                f"{what}: the server sent a broken response ({shapes.clip(str(exc), 120)})"
            ) from None
        except prometheus_http.RedirectRefused as exc:
            raise PrometheusRequestError(f"{self.url}{path}: {visible(exc.reason)}") from None
        except urllib.error.URLError as exc:
            raise PrometheusUnreachable(f"cannot reach {self.url}: {_reason(exc.reason)}") from None
        except OSError as exc:
            raise PrometheusUnreachable(f"cannot reach {self.url}: {_reason(exc)}") from None
        if answer.status >= 300:
            raise self._http_error(answer, path, params)
        return answer.body

    def _http_error(
        self, answer: prometheus_http.Answer, path: str, params: dict[str, str]
    ) -> PrometheusError:
        try:
            payload = shapes.decode(answer.body)
        except shapes.ShapeError:
            payload = None
        code, reason = answer.status, shapes.clip(answer.reason, 80)
        if code >= 500 and code != 501:
            detail = _api_error(payload) if payload else reason
            return PrometheusUnreachable(f"{self.url} answered HTTP {code}: {detail}")
        if code == 400 and isinstance(payload, dict):  # bad_data: the expression
            where = shapes.short(params.get("query", ""), 300)
            return PrometheusRequestError(f"bad query {where}: {_api_error(payload)}")
        if code in (401, 403):
            return PrometheusRequestError(
                f"{self.url} answered HTTP {code} ({reason}): "
                "credentials go in the URL, http://user:password@host:9090"
            )
        return PrometheusRequestError(
            f"{self.url}{path} answered HTTP {code} ({reason}): "
            "is this the Prometheus server's base URL?"
        )


def _size(n: int) -> str:
    return f"{n >> 20} MiB" if n >= 1 << 20 else f"{n} bytes"


def _reason(reason: object) -> str:
    text = getattr(reason, "strerror", None) or str(reason)
    return visible(str(text))


def _api_error(payload: Any) -> str:
    if isinstance(payload, dict):
        message = payload.get("error") or payload.get("errorType") or "request failed"
        return shapes.clip(str(message), 200)
    return "not a Prometheus API answer"


_UNITS = {
    "ms": 0.001,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
    "d": 86400.0,
    "w": 604800.0,
    "y": 31536000.0,
}


def parse_duration(text: str) -> float | None:
    """Prometheus durations such as `15s`, `1m30s`, `500ms`; None when not one."""
    import re

    parts = re.findall(r"(\d+(?:\.\d+)?)(ms|s|m|h|d|w|y)", text)
    if not parts or "".join(n + u for n, u in parts) != text:
        return None
    return sum(float(n) * _UNITS[u] for n, u in parts)
