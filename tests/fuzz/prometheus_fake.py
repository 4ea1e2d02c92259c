"""A fake Prometheus HTTP API on 127.0.0.1 that answers each query as it is told to.

Shared by tests/sources/prometheus/test_prometheus_responses.py (the named broken
answers) and family_prometheus.py (generated ones). The cluster reader sends
a fixed set of queries (sources/prometheus/source.py); `kind_of` names each one,
`fleet_answer` gives the answer a real Prometheus would for a small fleet,
and a `Reply` says how to send it, broken or not: any status line and
headers, a Content-Length that lies, a body dripped one byte at a time, a
connection held open after the body.
"""

from __future__ import annotations

import json
import re
import sys
import threading
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

AUTO = -1  # Content-Length: the body's real length


@dataclass(frozen=True)
class Reply:
    body: bytes = b""
    status: bytes = b"HTTP/1.1 200 OK"
    headers: tuple[bytes, ...] = (b"Content-Type: application/json",)
    length: int | None = AUTO  # None: no Content-Length (the body ends when the connection does)
    drip_s: float = 0.0  # seconds between bytes of the whole answer
    hold_s: float = 0.0  # keep the connection open this long after the body
    raw: bytes | None = None  # the whole answer, bytes as they are, instead of the above

    def wire(self) -> tuple[bytes, bytes]:
        """(head, body) as sent."""
        if self.raw is not None:
            return self.raw, b""
        lines = [self.status, *self.headers]
        if self.length is not None:
            lines.append(
                b"Content-Length: %d" % (len(self.body) if self.length == AUTO else self.length)
            )
        lines.append(b"Connection: close")
        return b"\r\n".join(lines) + b"\r\n\r\n", self.body


def json_reply(payload: Any, **kwargs: Any) -> Reply:
    return Reply(json.dumps(payload).encode(), **kwargs)


Responder = Callable[[str, dict[str, str]], Reply]


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        parts = urllib.parse.urlsplit(self.path)
        params = dict(urllib.parse.parse_qsl(parts.query))
        self.close_connection = True
        try:
            reply = self.server.responder(parts.path, params)
        except Exception as exc:  # a bug in a test's responder: say so, as a 500
            reply = Reply(f"responder failed: {exc!r}".encode(), status=b"HTTP/1.1 500 Oops")
        head, body = reply.wire()
        try:
            if reply.drip_s > 0:  # status line, headers and body alike
                wire = head + body
                for i in range(len(wire)):
                    self.wfile.write(wire[i : i + 1])
                    self.wfile.flush()
                    time.sleep(reply.drip_s)
            else:
                self.wfile.write(head)
                self.wfile.write(body)
            self.wfile.flush()
            if reply.hold_s > 0:
                time.sleep(reply.hold_s)
        except OSError:  # the client gave up (its deadline): that is the point
            pass

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    responder: Responder

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hung up (its deadline) is the point, not an error to print:
        socketserver would write a traceback to whatever sys.stderr is at that moment,
        which may be another test's captured stream."""
        if not isinstance(sys.exc_info()[1], OSError):
            super().handle_error(request, client_address)


class FakePrometheus:
    """Serves `responder(path, params)` for every GET, one thread per connection."""

    def __init__(self, responder: Responder | None = None) -> None:
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.responder = responder or (lambda path, params: fleet_reply(path, params))
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def serve(self, responder: Responder) -> None:
        self._server.responder = responder

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


# --- what a real Prometheus answers, for a small fleet -------------------------------------


@dataclass
class Gpu:
    host: str
    index: int
    model: str = "NVIDIA H100 80GB HBM3"
    values: dict[str, str] = field(default_factory=dict)  # metric -> value string

    @property
    def instance(self) -> str:
        return f"{self.host}:9400"

    def labels(self) -> dict[str, str]:
        return {"Hostname": self.host, "gpu": str(self.index), "instance": self.instance}


DEFAULT_VALUES = {
    "DCGM_FI_DEV_GPU_UTIL": "37",
    "DCGM_FI_DEV_MEM_COPY_UTIL": "12",
    "DCGM_FI_DEV_FB_USED": "20480",
    "DCGM_FI_DEV_FB_FREE": "60000",
    "DCGM_FI_DEV_FB_RESERVED": "500",
    "DCGM_FI_DEV_GPU_TEMP": "61",
    "DCGM_FI_DEV_POWER_USAGE": "312.5",
    "DCGM_FI_DEV_SM_CLOCK": "1755",
    "DCGM_FI_DEV_MEM_CLOCK": "2619",
    "gputui_gpu_up": "1",
}


def default_fleet() -> list[Gpu]:
    return [
        Gpu(host, i, values=dict(DEFAULT_VALUES)) for host in ("node-a", "node-b") for i in range(2)
    ]


_NAME = re.compile(r'__name__="([A-Za-z_:][A-Za-z0-9_:]*)"')


def kind_of(path: str, params: dict[str, str]) -> str:
    """Which of the reader's queries this is: check, targets, fresh, metric:NAME, labelled, up, range."""
    if path.endswith("/targets"):
        return "targets"
    query = params.get("query", "")
    if path.endswith("/query_range"):
        return "range"
    if query.startswith("count("):
        return "check"
    if "timestamp(" in query:
        return "fresh"
    if query == "up":
        return "up"
    if "__name__=~" in query:
        return "labelled"
    found = _NAME.search(query)
    return f"metric:{found.group(1)}" if found else "other"


def _vector(items: list[dict[str, Any]]) -> dict[str, Any]:
    return {"status": "success", "data": {"resultType": "vector", "result": items}}


def fleet_answer(kind: str, gpus: list[Gpu], now: float | None = None) -> dict[str, Any]:
    """The JSON payload a Prometheus scraping these GPUs gives for a query of this kind."""
    now = time.time() if now is None else now
    if kind == "check":
        return _vector([{"metric": {}, "value": [now, str(len(gpus))]}])
    if kind == "targets":
        instances = sorted({g.instance for g in gpus})
        return {
            "status": "success",
            "data": {
                "activeTargets": [
                    {
                        "labels": {"instance": i, "job": "gpu"},
                        "scrapeInterval": "15s",
                        "health": "up",
                    }
                    for i in instances
                ],
                "droppedTargets": [],
            },
        }
    if kind == "fresh":
        return _vector(
            [
                {
                    "metric": {
                        **g.labels(),
                        "modelName": g.model,
                        "UUID": f"GPU-{g.host}-{g.index}",
                    },
                    "value": [now, f"{now - 3:.3f}"],
                }
                for g in gpus
            ]
        )
    if kind == "up":
        instances = sorted({g.instance for g in gpus})
        return _vector(
            [{"metric": {"instance": i, "job": "gpu"}, "value": [now, "1"]} for i in instances]
        )
    if kind == "labelled":
        return _vector([])
    if kind == "range":
        return {
            "status": "success",
            "data": {
                "resultType": "matrix",
                "result": [
                    {
                        "metric": g.labels(),
                        "values": [[now - 60 + s, "40"] for s in range(0, 60, 15)],
                    }
                    for g in gpus
                ],
            },
        }
    if kind.startswith("metric:"):
        name = kind.split(":", 1)[1]
        return _vector(
            [
                {"metric": g.labels(), "value": [now, g.values[name]]}
                for g in gpus
                if name in g.values
            ]
        )
    return _vector([])


def fleet_reply(path: str, params: dict[str, str], gpus: list[Gpu] | None = None) -> Reply:
    return json_reply(
        fleet_answer(kind_of(path, params), gpus if gpus is not None else default_fleet())
    )
