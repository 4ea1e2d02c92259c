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
- `PrometheusUnreachable`: connection refused, timeout, 5xx: the views keep
  the last data and retry with back-off.
"""

from __future__ import annotations

import base64
import json
import math
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any

from gputui.textsafe import visible

DEFAULT_TIMEOUT_S = 5.0


class PrometheusError(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class PrometheusRequestError(PrometheusError):
    """The request itself is wrong: bad URL, not a Prometheus server, bad selector."""


class PrometheusUnreachable(PrometheusError):
    """The server did not answer usefully this time; worth retrying."""


@dataclass(frozen=True, slots=True)
class Sample:
    labels: dict[str, str]
    timestamp: float
    value: float  # NaN stays NaN here; callers decide what it means


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


def _float(text: Any) -> float:
    try:
        return float(text)
    except (TypeError, ValueError):
        return math.nan


class PrometheusClient:
    """Blocking; one instance per view. `requests` counts HTTP requests made (benchmarks)."""

    def __init__(self, url: str, *, timeout: float = DEFAULT_TIMEOUT_S) -> None:
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
        self.requests = 0

    # --- the API ------------------------------------------------------------------
    def query(self, expr: str, at: float | None = None) -> list[Sample]:
        params = {"query": expr}
        if at is not None:
            params["time"] = f"{at:.3f}"
        data = self._get("/api/v1/query", params)
        if data.get("resultType") != "vector":
            raise PrometheusRequestError(f"{expr}: expected a vector, got {data.get('resultType')}")
        out = []
        for item in data.get("result", []):
            ts, value = item.get("value", (math.nan, "NaN"))
            out.append(Sample(dict(item.get("metric", {})), _float(ts), _float(value)))
        return out

    def query_range(self, expr: str, start: float, end: float, step: float) -> list[RangeSeries]:
        data = self._get(
            "/api/v1/query_range",
            {"query": expr, "start": f"{start:.3f}", "end": f"{end:.3f}", "step": f"{step:g}"},
        )
        out = []
        for item in data.get("result", []):
            points = tuple((_float(t), _float(v)) for t, v in item.get("values", []))
            out.append(RangeSeries(dict(item.get("metric", {})), points))
        return out

    def scrape_intervals(self) -> dict[str, float]:
        """Seconds between scrapes per `instance`, from /api/v1/targets (Prometheus >= 2.4x)."""
        data = self._get("/api/v1/targets", {"state": "active"})
        out: dict[str, float] = {}
        for target in data.get("activeTargets", []):
            instance = target.get("labels", {}).get("instance")
            seconds = parse_duration(str(target.get("scrapeInterval", "")))
            if instance and seconds:
                out[instance] = seconds
        return out

    # --- transport ----------------------------------------------------------------
    def _get(self, path: str, params: dict[str, str]) -> dict[str, Any]:
        url = f"{self.url}{path}?{urllib.parse.urlencode(params)}"
        request = urllib.request.Request(url, headers={"Accept": "application/json"})
        if self._auth:
            request.add_header("Authorization", self._auth)
        self.requests += 1
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                body = response.read()
        except urllib.error.HTTPError as exc:
            raise self._http_error(exc, path, params) from None
        except urllib.error.URLError as exc:
            raise PrometheusUnreachable(f"cannot reach {self.url}: {_reason(exc.reason)}") from None
        except TimeoutError:
            raise PrometheusUnreachable(
                f"{self.url} did not answer within {self.timeout:g} s"
            ) from None
        except OSError as exc:
            raise PrometheusUnreachable(f"cannot reach {self.url}: {_reason(exc)}") from None
        try:
            payload = json.loads(body)
        except ValueError:
            raise PrometheusRequestError(
                f"{self.url}{path} did not answer JSON: is this a Prometheus server?"
            ) from None
        if not isinstance(payload, dict) or payload.get("status") != "success":
            raise PrometheusRequestError(f"{self.url}{path}: {_api_error(payload)}")
        data = payload.get("data", {})
        return data if isinstance(data, dict) else {}

    def _http_error(
        self, exc: urllib.error.HTTPError, path: str, params: dict[str, str]
    ) -> PrometheusError:
        try:
            payload = json.loads(exc.read())
        except (ValueError, OSError):
            payload = None
        if exc.code >= 500 and exc.code != 501:
            detail = _api_error(payload) if payload else exc.reason
            return PrometheusUnreachable(f"{self.url} answered HTTP {exc.code}: {detail}")
        if exc.code == 400 and isinstance(payload, dict):  # bad_data: the expression
            where = params.get("query", "")
            return PrometheusRequestError(f"bad query {where!r}: {_api_error(payload)}")
        if exc.code in (401, 403):
            return PrometheusRequestError(
                f"{self.url} answered HTTP {exc.code} ({exc.reason}): "
                "credentials go in the URL, http://user:password@host:9090"
            )
        return PrometheusRequestError(
            f"{self.url}{path} answered HTTP {exc.code} ({exc.reason}): "
            "is this the Prometheus server's base URL?"
        )


def _reason(reason: object) -> str:
    text = getattr(reason, "strerror", None) or str(reason)
    return visible(str(text))


def _api_error(payload: Any) -> str:
    if isinstance(payload, dict):
        return visible(str(payload.get("error") or payload.get("errorType") or "request failed"))
    return "not a Prometheus API answer"


_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0, "y": 31536000.0}


def parse_duration(text: str) -> float | None:
    """Prometheus durations such as `15s`, `1m30s`, `500ms`; None when not one."""
    import re

    parts = re.findall(r"(\d+(?:\.\d+)?)(ms|s|m|h|d|w|y)", text)
    if not parts or "".join(n + u for n, u in parts) != text:
        return None
    return sum(float(n) * _UNITS[u] for n, u in parts)
