"""The exporter under hostile requests: no request can print a traceback or flood the log.

prometheus_client raises on an Accept version it cannot compare
(`version=abc`); a collector can fail; wsgiref prints a traceback per failed
request. Each of these must end as an answer (plain text, or a 500) and at
most one short line, and a flood of them as a bounded number of lines.
"""

from __future__ import annotations

import io
import socket
from collections.abc import Iterator
from typing import Any

import pytest
from prometheus_client import CollectorRegistry, Gauge

from gputui.exporter import errorlog
from gputui.exporter.server import MetricsServer, content_type

UNNEGOTIABLE = [
    "application/openmetrics-text; version=abc",
    "text/plain; version=1.0.x",
    "application/openmetrics-text; version=1.0.0\u202e",
    "text/plain; version=²",
]


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def log(monkeypatch: pytest.MonkeyPatch) -> io.StringIO:
    """The exporter's line log, into a buffer, on a clock that does not move."""
    out = io.StringIO()
    monkeypatch.setattr(errorlog, "LOG", errorlog.LineLog(lambda: out, clock=FakeClock()))
    return out


class Broken:
    """A collector that fails at every scrape."""

    def collect(self) -> Iterator[Any]:
        raise RuntimeError("sensor went away\nsecond line")


def serve(registry: CollectorRegistry, **kwargs: Any) -> MetricsServer:
    server = MetricsServer(registry, "127.0.0.1", 0, **kwargs)
    server.start()
    return server


@pytest.fixture
def registry() -> CollectorRegistry:
    reg = CollectorRegistry(auto_describe=False)
    Gauge("gputui_probe", "a probe", registry=reg).set(3)
    return reg


def request(server: MetricsServer, raw: bytes) -> tuple[str, dict[str, str], bytes]:
    """One raw request; (status line, headers, body)."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.sendall(raw)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    status, *lines = head.decode("latin-1").split("\r\n")
    headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines)}
    return status, headers, body


def get(
    server: MetricsServer, *headers: str, path: str = "/metrics"
) -> tuple[str, dict[str, str], bytes]:
    head = "".join(f"{h}\r\n" for h in headers)
    return request(server, f"GET {path} HTTP/1.1\r\nHost: x\r\n{head}\r\n".encode())


@pytest.mark.parametrize("accept", UNNEGOTIABLE)
@pytest.mark.parametrize("cached", [False, True], ids=["uncached", "cached"])
def test_an_accept_header_the_library_cannot_negotiate_gets_the_text_format(
    accept: str,
    cached: bool,
    registry: CollectorRegistry,
    log: io.StringIO,
    capfd: pytest.CaptureFixture[str],
) -> None:
    if content_type(accept) is not None:
        # prometheus-client before choose_encoder ignored the version and negotiated these.
        pytest.skip(f"this prometheus-client negotiates {accept!r}")
    server = serve(registry, generation=(lambda: 1) if cached else None)
    try:
        status, headers, body = request(
            server,
            f"GET /metrics HTTP/1.1\r\nHost: x\r\nAccept: {accept}\r\n\r\n".encode(),
        )
    finally:
        server.shutdown()
    assert status.split()[1] == "200"
    assert headers["content-type"].startswith("text/plain; version=0.0.4")
    assert b"gputui_probe 3.0" in body
    lines = log.getvalue().splitlines()
    assert len(lines) == 1 and "Accept" in lines[0], lines
    assert "\u202e" not in lines[0]
    assert "Traceback" not in capfd.readouterr().err


def test_a_failing_collector_is_a_500_and_one_line(
    log: io.StringIO, capfd: pytest.CaptureFixture[str]
) -> None:
    reg = CollectorRegistry(auto_describe=False)
    reg.register(Broken())  # type: ignore[arg-type]
    server = serve(reg)
    try:
        status, headers, body = get(server)
    finally:
        server.shutdown()
    assert status.split()[1] == "500"
    assert headers["content-type"].startswith("text/plain")
    assert b"Traceback" not in body and b"sensor" not in body  # nothing internal to the client
    lines = log.getvalue().splitlines()
    assert len(lines) == 1 and "RuntimeError" in lines[0] and "500" in lines[0], lines
    assert "Traceback" not in capfd.readouterr().err


@pytest.mark.parametrize(
    "accept", ["", "application/openmetrics-text; version=1.0.0", UNNEGOTIABLE[0]]
)
def test_a_failing_collector_is_one_line_whatever_the_accept_header(
    accept: str, log: io.StringIO
) -> None:
    """Prometheus always sends an Accept header: a broken scrape must still be one line."""
    reg = CollectorRegistry(auto_describe=False)
    reg.register(Broken())  # type: ignore[arg-type]
    server = serve(reg)
    try:
        status = get(server, *([f"Accept: {accept}"] if accept else []))[0]
    finally:
        server.shutdown()
    assert status.split()[1] == "500"
    assert len(log.getvalue().splitlines()) == 1, log.getvalue()


def test_a_flood_of_failing_requests_writes_a_bounded_log(
    log: io.StringIO, capfd: pytest.CaptureFixture[str]
) -> None:
    reg = CollectorRegistry(auto_describe=False)
    reg.register(Broken())  # type: ignore[arg-type]
    server = serve(reg)
    try:
        statuses = [get(server, f"Accept: text/plain; version={i}.x")[0] for i in range(40)]
    finally:
        server.shutdown()
    assert all(s.split()[1] == "500" for s in statuses)
    assert len(log.getvalue().splitlines()) == errorlog.BURST
    assert "Traceback" not in capfd.readouterr().err


def test_basic_auth_comes_before_any_line(
    registry: CollectorRegistry, log: io.StringIO, tmp_path: Any
) -> None:
    """A client without credentials cannot make the exporter write anything."""
    from prometheus_client.exposition import make_wsgi_app

    from gputui.exporter.server import plain_on_bad_accept, with_basic_auth

    app = with_basic_auth(plain_on_bad_accept(make_wsgi_app(registry)), {"u": "p"})
    got: list[str] = []
    environ = {"REQUEST_METHOD": "GET", "PATH_INFO": "/metrics", "HTTP_ACCEPT": UNNEGOTIABLE[0]}
    app(environ, lambda status, headers, *_: got.append(status))
    assert got == ["401 Unauthorized"] and log.getvalue() == ""


def test_the_response_cache_does_not_grow_with_header_variants(registry: CollectorRegistry) -> None:
    """Accept texts that choose the same format share one cached answer."""
    from gputui.exporter.server import cached

    calls: list[int] = []

    def app(environ: dict[str, Any], start_response: Any) -> list[bytes]:
        calls.append(1)
        start_response("200 OK", [])
        return [b"x"]

    serve_cached = cached(app, lambda: 1)
    for i in range(20):
        serve_cached(
            {"REQUEST_METHOD": "GET", "HTTP_ACCEPT": f"text/html;q=0.{i}"}, lambda *a: None
        )
    assert len(calls) == 1


# --- the line log itself --------------------------------------------------------------------


def test_line_log_is_rate_limited_and_counts_what_it_held_back() -> None:
    out, clock = io.StringIO(), FakeClock()
    log = errorlog.LineLog(lambda: out, clock=clock, burst=3, window_s=60)
    written = [log.line(f"event {i}") for i in range(10)]
    assert written == [True] * 3 + [False] * 7
    clock.now = 61
    assert log.line("later")
    lines = out.getvalue().splitlines()
    assert len(lines) == 4
    assert lines[-1] == "gputui exporter: later (7 similar lines held back)"


def test_line_log_is_one_short_visible_line() -> None:
    out = io.StringIO()
    log = errorlog.LineLog(lambda: out, clock=FakeClock())
    log.line("a\nb\x1b[2J\u202e" + "x" * 5000)
    (line,) = out.getvalue().splitlines()
    assert "\x1b" not in line and "\u202e" not in line
    assert len(line) <= errorlog.MAX_LINE + len("gputui exporter: ")


class Failing(io.StringIO):
    def write(self, text: str) -> int:
        raise OSError(28, "No space left on device")


@pytest.mark.parametrize("stream", [Failing(), None], ids=["full", "closed"])
def test_line_log_survives_a_stderr_that_fails(stream: Any) -> None:
    log = errorlog.LineLog(lambda: stream, clock=FakeClock())
    assert log.line("nobody will read this")
