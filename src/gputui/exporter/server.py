"""The /metrics endpoint: prometheus_client's WSGI app behind optional TLS and basic auth.

Why not `prometheus_client.start_http_server`: it does TLS (certfile/keyfile,
client CA) but has no basic auth, and it does not say which port it bound
(`--listen 127.0.0.1:0` in the tests), and its thread per connection lets
idle clients hold the endpoint (see connections.py). This is its own recipe:
the library's `make_wsgi_app` for the exposition and content negotiation,
wsgiref's request handler, a bounded acceptor with deadlines, the standard
library's `ssl` for TLS and a constant-time check of an `Authorization: Basic`
header.

Basic auth is only accepted together with TLS: without it the password
crosses the network in clear on every scrape. Prometheus' scrape config
(`basic_auth: {username, password_file}`) keeps the same password in clear on
its side, so a file of `user:password` lines readable only by the exporter's
user is no weaker than the other end; bcrypt hashes (Prometheus' web-config
format) would need a compiled dependency for no gain in that setting.
"""

from __future__ import annotations

import base64
import hmac
import io
import socket
import ssl
import sys
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from wsgiref.simple_server import ServerHandler, WSGIRequestHandler

from prometheus_client import exposition
from prometheus_client.exposition import gzip_accepted, make_wsgi_app
from prometheus_client.registry import CollectorRegistry

from gputui.core.errors import UserError
from gputui.core.inputfile import SMALL_CAP, check_option_file, read_option_text, shown
from gputui.core.textsafe import visible
from gputui.exporter import errorlog
from gputui.exporter.connections import BACKLOG, BoundedServer, Limits
from gputui.exporter.errorlog import short
from gputui.exporter.listen import parse_listen

__all__ = ["MetricsServer", "TlsFiles", "parse_listen"]

StartResponse = Callable[..., Any]

# The library's content negotiation: `choose_encoder` in newer versions, `choose_formatter`
# before it (the floor, 0.14, has only that); both answer (encoder, content type).
_NAMES = vars(exposition)
CHOOSE: Callable[[str], tuple[Any, str]] = (
    _NAMES.get("choose_encoder") or _NAMES["choose_formatter"]
)
WsgiApp = Callable[[dict[str, Any], StartResponse], Iterable[bytes]]

LANDING = (
    b"<html><head><title>gputui exporter</title></head><body>"
    b'<h1>gputui exporter</h1><p><a href="/metrics">/metrics</a></p></body></html>'
)


@dataclass(frozen=True, slots=True)
class TlsFiles:
    cert: Path
    key: Path
    client_ca: Path | None = None  # set: clients must present a certificate signed by it


def is_loopback(host: str) -> bool:
    import ipaddress

    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def load_users(path: Path) -> dict[str, str]:
    """`user:password` per line (# comments); the file must not be readable by others."""
    option = "--basic-auth-file"
    mode = check_option_file(path, option, SMALL_CAP).st_mode
    if mode & 0o077:
        raise UserError(
            f"{option}: {shown(path)}: readable by group or others (mode {mode & 0o777:o}); "
            "chmod 600 it"
        )
    text = read_option_text(path, option, SMALL_CAP)
    users: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        user, sep, password = line.partition(":")
        if not sep or not user or not password:
            raise UserError(f"{option}: {shown(path)}:{number}: expected user:password")
        users[user] = password
    if not users:
        raise UserError(f"{option}: {shown(path)}: no user:password line")
    return users


def with_basic_auth(app: WsgiApp, users: dict[str, str]) -> WsgiApp:
    expected = {u: p.encode() for u, p in users.items()}

    def guarded(environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        header = environ.get("HTTP_AUTHORIZATION", "")
        scheme, _, token = header.partition(" ")
        ok = False
        if scheme.lower() == "basic":
            try:
                user, _, password = base64.b64decode(token, validate=True).decode().partition(":")
            except (ValueError, UnicodeDecodeError):
                user, password = "", ""
            want = expected.get(user)
            # compare even for an unknown user, so timing does not tell which users exist
            ok = hmac.compare_digest(password.encode(), want or b"\0" * 16) and want is not None
        if not ok:
            start_response(
                "401 Unauthorized",
                [("WWW-Authenticate", 'Basic realm="gputui"'), ("Content-Type", "text/plain")],
            )
            return [b"Unauthorized\n"]
        return app(environ, start_response)

    return guarded


def cached(app: WsgiApp, generation: Callable[[], int]) -> WsgiApp:
    """The library's response, encoded (and gzipped) once per poll instead of once per scrape.

    Keyed by the poll generation and what shapes the answer (method, Accept,
    Accept-Encoding, query string): the library still negotiates the format and
    encodes; scrapes between two polls get the same bytes. A few entries at most
    (Prometheus' Accept header, a curl's, a browser's).
    """
    lock = threading.Lock()
    store: dict[tuple[Any, ...], tuple[str, list[tuple[str, str]], bytes]] = {}

    def serve(environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        # What the answer depends on, not the raw headers: a client varying its Accept or
        # Accept-Encoding text cannot make every scrape encode afresh.
        key = (
            generation(),
            environ.get("REQUEST_METHOD"),
            content_type(environ.get("HTTP_ACCEPT") or ""),
            gzip_accepted(environ.get("HTTP_ACCEPT_ENCODING") or ""),
            environ.get("QUERY_STRING"),
        )
        with lock:
            hit = store.get(key)
            if hit is None:
                got: dict[str, Any] = {}

                def capture(status: str, headers: list[tuple[str, str]], *_: Any) -> None:
                    got["status"], got["headers"] = status, headers

                body = b"".join(app(environ, capture))
                hit = (got["status"], list(got["headers"]), body)
                for old in [k for k in store if k[0] != key[0]]:
                    del store[old]
                if len(store) < 8:
                    store[key] = hit
        start_response(hit[0], hit[1])
        return [hit[2]]

    return serve


def content_type(accept: str) -> str | None:
    """The exposition format prometheus_client picks for `accept`, or None when it cannot.

    The library raises on versions it cannot compare (`version=abc`) and echoes the
    version it accepts into the Content-Type: only printable ASCII may go back out.
    """
    try:
        chosen = CHOOSE(accept)[1]
    except Exception:  # noqa: BLE001 - whatever the library raises on a client's header
        return None
    return chosen if chosen.isascii() and chosen.isprintable() else None


def plain_on_bad_accept(app: WsgiApp) -> WsgiApp:
    """An Accept header the library cannot negotiate gets the plain text format and one line.

    Prometheus itself always sends a header the library understands; anything else
    is a curl, a browser or a hostile client, and the text format is what all of
    them can read. Also retried as plain text: an encoder that fails on an
    accepted but odd header.
    """

    def serve(environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        accept = environ.get("HTTP_ACCEPT") or ""
        if accept and content_type(accept) is None:
            answer = app({**environ, "HTTP_ACCEPT": ""}, start_response)
            errorlog.LOG.line(
                f"unusable Accept header {short(accept)!r}: answered in the text format"
            )
            return answer
        if not accept:
            return app(environ, start_response)
        try:
            return app(environ, start_response)
        except Exception as exc:  # noqa: BLE001 - see guarded(); the plain format is the fallback
            # When the text format fails too, the failure is not the header's: guarded()
            # writes the request's one line; this one only when the retry worked.
            answer = app({**environ, "HTTP_ACCEPT": ""}, start_response)
            errorlog.LOG.line(
                f"encoding for Accept {short(accept)!r} failed ({type(exc).__name__}): "
                "answered in the text format"
            )
            return answer

    return serve


def guarded(app: WsgiApp) -> WsgiApp:
    """The outermost layer: whatever fails inside is a 500 and one line, never a traceback.

    Every inner app builds its whole answer before calling start_response, so a
    failure here always comes before the status line was sent.
    """

    def serve(environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        try:
            return app(environ, start_response)
        except Exception as exc:  # noqa: BLE001 - one request's failure is one line
            errorlog.LOG.line(
                f"{short(environ.get('REQUEST_METHOD', '?'), 16)} "
                f"{short(environ.get('PATH_INFO', '?'), 40)}: answered 500 "
                f"({type(exc).__name__}: {short(exc, 80)})"
            )
            start_response(
                "500 Internal Server Error",
                [("Content-Type", "text/plain; charset=utf-8")],
                sys.exc_info(),
            )
            return [b"Internal Server Error: see the exporter's log\n"]

    return serve


def routed(metrics: WsgiApp) -> WsgiApp:
    def app(environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "/")
        if path == "/metrics":
            return metrics(environ, start_response)
        if path == "/":
            start_response("200 OK", [("Content-Type", "text/html")])
            return [LANDING]
        start_response("404 Not Found", [("Content-Type", "text/plain")])
        return [b"Not Found: the metrics are at /metrics\n"]

    return app


class _QuietHandler(WSGIRequestHandler):
    """wsgiref's request parsing and WSGI run, fed the head the acceptor already read."""

    def __init__(self, head: bytes, writer: _DeadlineWriter, *args: Any) -> None:
        self._head, self._writer = head, writer
        super().__init__(*args)

    def setup(self) -> None:
        self.connection = self.request
        self.rfile = io.BytesIO(self._head)
        self.wfile = self._writer  # type: ignore[assignment]  # write/flush/close is all it uses

    def handle(self) -> None:
        """wsgiref's own `handle`, with a ServerHandler that is quiet about a client's loss."""
        self.raw_requestline = self.rfile.readline(65537)
        if len(self.raw_requestline) > 65536:
            self.requestline, self.request_version, self.command = "", "", ""
            self.send_error(414)
            return
        if not self.parse_request():
            return
        handler = _ServerHandler(
            self.rfile,
            self._writer,  # type: ignore[arg-type]  # write/flush is all it uses
            self.get_stderr(),
            self.get_environ(),
            multithread=True,
        )
        handler.request_handler = self  # type: ignore[attr-defined]  # as wsgiref does
        handler.run(self.server.get_app())  # type: ignore[attr-defined]

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib's name
        """One line per scrape on stderr would flood a journal; errors still surface."""


class _ServerHandler(ServerHandler):
    def log_exception(self, exc_info: Any) -> None:
        """One line, never wsgiref's traceback: a client must not be able to flood the log.

        A client that left or stopped reading (OSError, the write deadline) is its own
        loss and not logged at all.
        """
        error = exc_info[1]
        if not isinstance(error, OSError):
            errorlog.LOG.line(f"request failed ({type(error).__name__}: {short(error, 80)})")


class _DeadlineWriter:
    """Sends a response that must be gone by `deadline`: a client that stops reading frees its worker."""

    def __init__(self, sock: socket.socket, deadline: float) -> None:
        self.sock, self.deadline, self.closed = sock, deadline, False

    def write(self, data: bytes) -> int:
        view = memoryview(data)
        while view:
            remaining = self.deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError("response not taken before the write deadline")
            self.sock.settimeout(remaining)
            sent = self.sock.send(view[:65536])
            view = view[sent:]
        return len(data)

    def flush(self) -> None:
        pass

    def close(self) -> None:
        self.closed = True


class _WsgiHost:
    """The two things wsgiref's handler asks of its server: the app and the base environ."""

    def __init__(self, app: WsgiApp, host: str, port: int, tls: bool) -> None:
        self.app = app
        self.base_environ: dict[str, str] = {
            "SERVER_NAME": host,
            "GATEWAY_INTERFACE": "CGI/1.1",
            "SERVER_PORT": str(port),
            "REMOTE_HOST": "",
            "CONTENT_LENGTH": "",
            "SCRIPT_NAME": "",
        }
        if tls:
            self.base_environ["HTTPS"] = "on"

    def get_app(self) -> WsgiApp:
        return self.app

    def answer(
        self, sock: socket.socket, head: bytes, address: tuple[str, int], deadline: float
    ) -> None:
        _QuietHandler(head, _DeadlineWriter(sock, deadline), sock, address, self)


def _pem(path: Path, option: str, marker: str) -> str:
    """The PEM text of a TLS file, read through the input boundary (kind, size, UTF-8)."""
    text = read_option_text(path, option, SMALL_CAP)
    if "-----BEGIN " not in text or marker not in text:
        raise UserError(f"{option}: {shown(path)}: no PEM {marker.strip('-').lower()} in it")
    return text


def _no_password(key: Path) -> Callable[[], str]:
    """OpenSSL would ask for an encrypted key's pass phrase on the terminal: refuse instead."""

    def refuse() -> str:
        raise UserError(f"--tls-key: {shown(key)}: encrypted; give an unencrypted key (mode 600)")

    return refuse


def tls_context(tls: TlsFiles) -> ssl.SSLContext:
    """The server context. Each file is checked and read through core/inputfile first; the
    certificate and key then go to `ssl` by name (it takes no other form), the CA as text."""
    _pem(tls.cert, "--tls-cert", "CERTIFICATE-----")
    _pem(tls.key, "--tls-key", "PRIVATE KEY-----")
    ca = _pem(tls.client_ca, "--tls-client-ca", "CERTIFICATE-----") if tls.client_ca else None
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        ctx.load_cert_chain(str(tls.cert), str(tls.key), password=_no_password(tls.key))
        if ca is not None:
            ctx.load_verify_locations(cadata=ca)
            ctx.verify_mode = ssl.CERT_REQUIRED
    except (OSError, ssl.SSLError, ValueError) as exc:
        raise UserError(
            f"TLS: cannot load {shown(tls.cert)} / {shown(tls.key)}: {short(exc, 120)}"
        ) from None
    return ctx


def _listen(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        return socket.create_server((host, port), family=family, backlog=BACKLOG)
    except OSError as exc:
        raise UserError(f"--listen {visible(host)}:{port}: {exc.strerror or exc}") from None
    except (UnicodeError, ValueError, TypeError, OverflowError) as exc:  # parse_listen's gaps
        raise UserError(f"--listen {visible(host)}:{port}: {short(exc, 80)}") from None


class MetricsServer:
    """A running endpoint; `port` is the bound one (useful with port 0)."""

    def __init__(
        self,
        registry: CollectorRegistry,
        host: str,
        port: int,
        *,
        tls: TlsFiles | None = None,
        users: dict[str, str] | None = None,
        generation: Callable[[], int] | None = None,
        limits: Limits | None = None,
    ) -> None:
        # Inside auth: a client without credentials cannot make it write a line.
        app: WsgiApp = plain_on_bad_accept(make_wsgi_app(registry))
        if generation is not None:
            app = cached(app, generation)
        if users:
            app = with_basic_auth(app, users)
        context = tls_context(tls) if tls is not None else None
        listener = _listen(host, port)
        self.host = host
        self.port = int(listener.getsockname()[1])
        self.scheme = "https" if tls is not None else "http"
        wsgi = _WsgiHost(guarded(routed(app)), host, self.port, tls is not None)
        self.connections = BoundedServer(listener, wsgi.answer, tls=context, limits=limits)
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}:{self.port}/metrics"

    def serve_forever(self) -> None:
        self.connections.serve_forever()

    def start(self) -> None:
        self._thread = threading.Thread(
            target=self.connections.serve_forever, name="exporter-accept", daemon=True
        )
        self._thread.start()

    def shutdown(self) -> None:
        self.connections.shutdown()
