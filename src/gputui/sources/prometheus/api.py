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
and body), not a socket timeout that restarts at every byte
(prometheus_http.py).
"""

from __future__ import annotations

import base64
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from gputui.core.textsafe import visible
from gputui.sources.prometheus import http as prometheus_http
from gputui.sources.prometheus import shapes

DEFAULT_TIMEOUT_S = 5.0  # the deadline of one query, all of it
MAX_SCRAPE_INTERVAL_S = 86400.0  # a longer one from /targets is not believed: the default applies
_T = TypeVar("_T")


class PrometheusError(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class PrometheusRequestError(PrometheusError):
    """The request itself is wrong: bad URL, not a Prometheus server, bad selector."""


class PrometheusBadResponse(PrometheusRequestError):
    """The server answered with something the Prometheus API does not send."""


class PrometheusUnreachable(PrometheusError):
    """The server did not answer usefully this time; worth retrying."""


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
    """The base URL without a trailing slash; PrometheusRequestError naming it if unusable."""
    parsed = urllib.parse.urlsplit(url)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise PrometheusRequestError(
            f"--prometheus {url!r}: expected an http:// or https:// URL, "
            "e.g. http://prometheus:9090"
        )
    try:
        parsed.port  # noqa: B018 - raises ValueError for a bad port
    except ValueError:
        raise PrometheusRequestError(f"--prometheus {url!r}: bad port") from None
    if parsed.query or parsed.fragment:
        raise PrometheusRequestError(f"--prometheus {url!r}: no query string or fragment, please")
    return url.rstrip("/")


class PrometheusClient:
    """Blocking; one instance per view. `requests` counts HTTP requests made (benchmarks)."""

    def __init__(
        self,
        url: str,
        *,
        timeout: float = DEFAULT_TIMEOUT_S,
        max_body: int = prometheus_http.MAX_BODY_BYTES,
    ) -> None:
        base = check_url(url)
        parsed = urllib.parse.urlsplit(base)
        self._auth: str | None = None
        if parsed.username is not None:
            creds = f"{urllib.parse.unquote(parsed.username)}:{urllib.parse.unquote(parsed.password or '')}"
            self._auth = "Basic " + base64.b64encode(creds.encode()).decode()
            netloc = parsed.hostname or ""
            if ":" in netloc:
                netloc = f"[{netloc}]"
            if parsed.port is not None:
                netloc += f":{parsed.port}"
            base = urllib.parse.urlunsplit((parsed.scheme, netloc, parsed.path, "", "")).rstrip("/")
        self.url = base
        self.timeout = timeout
        self.max_body = max_body
        self.requests = 0

    # --- the API ------------------------------------------------------------------
    def query(self, expr: str, at: float | None = None) -> list[Sample]:
        params = {"query": expr}
        if at is not None:
            params["time"] = f"{at:.3f}"
        data = self._get("/api/v1/query", params)
        items = self._shape(shapes.vector, data, "/api/v1/query", params)
        return [Sample(labels, t, v) for labels, t, v in items]

    def query_range(self, expr: str, start: float, end: float, step: float) -> list[RangeSeries]:
        params = {"query": expr, "start": f"{start:.3f}", "end": f"{end:.3f}", "step": f"{step:g}"}
        data = self._get("/api/v1/query_range", params)
        items = self._shape(shapes.matrix, data, "/api/v1/query_range", params)
        return [RangeSeries(labels, points) for labels, points in items]

    def scrape_intervals(self) -> dict[str, float]:
        """Seconds between scrapes per `instance`, from /api/v1/targets (Prometheus >= 2.4x)."""
        params = {"state": "active"}
        data = self._get("/api/v1/targets", params)
        out: dict[str, float] = {}
        for labels, interval in self._shape(shapes.targets, data, "/api/v1/targets", params):
            instance = labels.get("instance")
            seconds = parse_duration(interval)
            if instance and seconds and seconds <= MAX_SCRAPE_INTERVAL_S:
                out[instance] = seconds
        return out

    # --- transport ----------------------------------------------------------------
    def _what(self, path: str, params: dict[str, str]) -> str:
        """The query as error lines name it."""
        query = params.get("query")
        return f"{self.url}{path}" + (f" (query {visible(query)})" if query else "")

    def _shape(
        self,
        read: Callable[[dict[str, Any]], _T],
        data: dict[str, Any],
        path: str,
        params: dict[str, str],
    ) -> _T:
        try:
            return read(data)
        except shapes.ShapeError as exc:
            raise PrometheusBadResponse(
                f"{self._what(path, params)}: not a Prometheus API answer: {exc.detail}"
            ) from None

    def _get(self, path: str, params: dict[str, str]) -> dict[str, Any]:
        url = f"{self.url}{path}?{urllib.parse.urlencode(params)}"
        request = urllib.request.Request(url, headers={"Accept": "application/json"})
        if self._auth:
            request.add_header("Authorization", self._auth)
        self.requests += 1
        what = self._what(path, params)
        try:
            answer = prometheus_http.get(request, self.timeout, self.max_body)
        except prometheus_http.DeadlinePassed:
            raise PrometheusUnreachable(
                f"{what}: no complete answer within {self.timeout:g} s (the deadline per query)"
            ) from None
        except prometheus_http.BodyTooLarge as exc:
            raise PrometheusBadResponse(
                f"{what}: the answer is over {_size(int(exc.args[0]))} (the cap on an answer)"
            ) from None
        except prometheus_http.BrokenHttp as exc:
            raise PrometheusBadResponse(
                f"{what}: the server sent a broken response ({shapes.clip(str(exc), 120)})"
            ) from None
        except urllib.error.URLError as exc:
            raise PrometheusUnreachable(f"cannot reach {self.url}: {_reason(exc.reason)}") from None
        except OSError as exc:
            raise PrometheusUnreachable(f"cannot reach {self.url}: {_reason(exc)}") from None
        if answer.status >= 300:
            raise self._http_error(answer, path, params)
        try:
            data = shapes.api_data(shapes.decode(answer.body))
        except shapes.ApiError as exc:
            raise PrometheusRequestError(f"{what}: {exc.message}") from None
        except shapes.ShapeError as exc:
            raise PrometheusBadResponse(
                f"{what}: the server sent a broken response: {exc.detail}"
            ) from None
        return data

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
            where = params.get("query", "")
            return PrometheusRequestError(f"bad query {where!r}: {_api_error(payload)}")
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
