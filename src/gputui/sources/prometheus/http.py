"""The HTTP policy of every request to Prometheus: one deadline, capped bodies, same-origin
redirects, credentials to the server named only, no compression.

Why not `urlopen(timeout=...)` alone: a socket timeout restarts at every
byte, so a server (or a proxy in front of it) that sends one byte every two
seconds holds a refresh for ever, and `response.read()` reads a 150 MB body
whole. Here a timer shuts the connection down when the query's deadline
passes, whatever phase it is in (connect, TLS handshake, status line,
headers, body), and the body is read in chunks up to the cap.

Redirects are followed here, not by urllib (whose handler copies every
ordinary header, `Authorization` included, to wherever the Location points):
only to the same origin (scheme, host and port, as endpoint.py parses them),
at most MAX_REDIRECTS, never in a loop, keeping the method and the body (the
query API takes GET and POST alike), all within the one deadline. A redirect
to another origin is refused with both origins named: the credentials of
`--prometheus http://user:pass@A` go to A only, and a query answered by a
server the user did not name is not a reading of their fleet.

No `Accept-Encoding` is sent; a body sent compressed anyway is refused, never
inflated (a small gzip bomb inflates past any cap).

urllib still does the rest of the HTTP work (proxies from the environment):
its connections are made through `_watched`, which keeps a duplicate of each
socket so the timer can shut it down even after TLS has taken the original
over.
"""

from __future__ import annotations

import contextlib
import http.client
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from gputui.sources.prometheus import endpoint

MAX_BODY_BYTES = 64 << 20  # far above the answer for thousands of GPUs; a bound on memory
MAX_ERROR_BODY_BYTES = 64 << 10  # an error answer is read only for its message
MAX_REDIRECTS = 5
REDIRECTS = (301, 302, 303, 307, 308)
_CHUNK = 1 << 16


class DeadlinePassed(Exception):
    """The whole exchange took longer than the query's deadline."""


class BodyTooLarge(Exception):
    """The answer is over the cap (declared by Content-Length, or read so far)."""


class BrokenHttp(Exception):
    """What http.client or urllib raise for a response that is not valid HTTP."""


class RedirectRefused(Exception):
    """A redirect this policy does not follow (another origin, a loop, too many, a bad URL)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class Request:
    """One request as the client means it; `credentials` go to `origin` only."""

    method: str  # GET or POST
    url: str
    origin: tuple[str, str, int]  # (scheme, host, port) of endpoint.Endpoint
    origin_text: str
    body: bytes | None = None  # form-encoded, for POST
    credentials: str | None = None  # the Authorization header's value


@dataclass(frozen=True, slots=True)
class Answer:
    status: int
    reason: str
    body: bytes
    location: str | None = None  # a redirect's Location


class Deadline:
    """Shuts every socket it watches down once `seconds` have passed since `__enter__`."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.expired = False
        self._end = time.monotonic() + seconds
        self._lock = threading.Lock()
        self._watched: list[socket.socket] = []
        self._timer: threading.Timer | None = None

    def remaining(self) -> float:
        return max(0.001, self._end - time.monotonic())

    def watch(self, sock: socket.socket) -> None:
        """Keep a duplicate: TLS detaches the original, shutdown acts on the connection."""
        dup = sock.dup()
        with self._lock:
            self._watched.append(dup)
            expired = self.expired
        if expired:
            _shutdown(dup)

    def _expire(self) -> None:
        with self._lock:
            self.expired = True
            watched = list(self._watched)
        for sock in watched:
            _shutdown(sock)

    def __enter__(self) -> Deadline:
        self._end = time.monotonic() + self.seconds
        self._timer = threading.Timer(self.seconds, self._expire)
        self._timer.daemon = True
        self._timer.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._timer is not None:
            self._timer.cancel()
        with self._lock:
            watched, self._watched = self._watched, []
        for sock in watched:
            sock.close()


def _shutdown(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)


def _watched(cls: type[http.client.HTTPConnection], deadline: Deadline) -> Callable[..., Any]:
    """A connection factory for urllib's do_open whose sockets the deadline can shut down."""

    def make(host: str, timeout: float | None = None, **kwargs: Any) -> http.client.HTTPConnection:
        conn = cls(host, timeout=deadline.remaining(), **kwargs)
        create = conn._create_connection  # type: ignore[attr-defined]

        def connect(address: Any, _timeout: Any = None, *args: Any) -> socket.socket:
            sock: socket.socket = create(address, deadline.remaining(), *args)
            deadline.watch(sock)
            return sock

        conn._create_connection = connect  # type: ignore[attr-defined]
        return conn

    return make


class _HttpHandler(urllib.request.HTTPHandler):
    def __init__(self, deadline: Deadline) -> None:
        super().__init__()
        self._deadline = deadline

    def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(_watched(http.client.HTTPConnection, self._deadline), req)


class _HttpsHandler(urllib.request.HTTPSHandler):
    def __init__(self, deadline: Deadline) -> None:
        super().__init__()
        self._deadline = deadline

    def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        context = getattr(self, "_context", None)
        return self.do_open(
            _watched(http.client.HTTPSConnection, self._deadline), req, context=context
        )


def _opener(deadline: Deadline) -> urllib.request.OpenerDirector:
    """urllib's chain for http(s) only, without its redirect handler: a 3xx is an answer."""
    opener = urllib.request.OpenerDirector()
    for handler in (
        urllib.request.ProxyHandler(),
        urllib.request.UnknownHandler(),
        _HttpHandler(deadline),
        _HttpsHandler(deadline),
        urllib.request.HTTPDefaultErrorHandler(),
        urllib.request.HTTPErrorProcessor(),
    ):
        opener.add_handler(handler)
    return opener


def _read(response: Any, cap: int, deadline: Deadline) -> bytes:
    headers = response.headers
    encoding = headers.get("Content-Encoding", "identity") if headers else "identity"
    if encoding.strip().lower() not in ("", "identity"):
        raise BrokenHttp(
            f"a body in Content-Encoding {encoding.strip()[:40]!r}, which was not asked for"
        )
    lengths = {v.strip() for v in headers.get_all("Content-Length") or ()} if headers else set()
    if len(lengths) > 1 or any(not v.isascii() or not v.isdigit() for v in lengths):
        # http.client would take the first, or read to the end for one it cannot parse
        shown = ", ".join(sorted(lengths))[:40]
        raise BrokenHttp(f"a Content-Length that is not one number ({shown!r})")
    declared = next(iter(lengths), None)
    if declared is not None and (len(declared) > 12 or int(declared) > cap):
        raise BodyTooLarge(cap)
    chunks: list[bytes] = []
    size = 0
    while True:
        if deadline.expired:
            raise DeadlinePassed
        chunk = response.read(min(_CHUNK, cap + 1 - size))
        if not chunk:
            missing = getattr(
                response, "length", None
            )  # http.client: what Content-Length still owes
            if isinstance(missing, int) and missing > 0:
                raise BrokenHttp(
                    f"IncompleteRead: the body ended after {size} of {size + missing} bytes"
                )
            return b"".join(chunks)
        chunks.append(chunk)
        size += len(chunk)
        if size > cap:
            raise BodyTooLarge(cap)


def _one(request: Request, url: str, deadline: Deadline, cap: int) -> Answer:
    """One exchange, no redirect followed; an HTTP error's body is capped smaller."""
    sent = urllib.request.Request(
        url,
        data=request.body,
        method=request.method,
        headers={"Accept": "application/json", "Accept-Encoding": "identity"},
    )
    if request.body is not None:
        sent.add_header("Content-Type", "application/x-www-form-urlencoded")
    if request.credentials is not None:
        sent.add_unredirected_header("Authorization", request.credentials)
    try:
        response = _opener(deadline).open(sent, timeout=deadline.remaining())
    except urllib.error.HTTPError as exc:
        with contextlib.closing(exc):
            location = exc.headers.get("Location") if exc.headers else None
            if exc.code in REDIRECTS:  # its body is not read: it may be huge
                return Answer(exc.code, str(exc.reason), b"", location)
            body = _read(exc, MAX_ERROR_BODY_BYTES, deadline) if exc.fp is not None else b""
            return Answer(exc.code, str(exc.reason), body)
    with response:
        return Answer(response.status, str(response.reason), _read(response, cap, deadline))


def _follow(request: Request, deadline: Deadline, cap: int) -> Answer:
    url = request.url
    seen = {url}
    for _ in range(MAX_REDIRECTS + 1):
        answer = _one(request, url, deadline, cap)
        if answer.status not in REDIRECTS or answer.location is None:
            return answer
        try:
            origin, target = endpoint.redirect(url, answer.location)
        except endpoint.BadUrl as exc:
            raise RedirectRefused(f"HTTP {answer.status} to a bad URL: {exc.reason}") from None
        if origin != request.origin:
            there = endpoint.Endpoint(origin[0], origin[1], origin[2], "").origin_text()
            raise RedirectRefused(
                f"HTTP {answer.status} from {request.origin_text} to another origin, {there}: "
                "not followed (gputui sends queries and credentials only where --prometheus "
                "points; give the URL it redirects to)"
            )
        if target in seen:
            raise RedirectRefused(f"HTTP {answer.status}: a redirect loop")
        seen.add(target)
        url = target
    raise RedirectRefused(f"over {MAX_REDIRECTS} redirects")


def fetch(request: Request, seconds: float, cap: int = MAX_BODY_BYTES) -> Answer:
    """The status and body of one request, HTTP errors included, redirects followed as the
    module says, everything within `seconds`.

    Raises DeadlinePassed, BodyTooLarge, BrokenHttp (the server's answer is not
    valid HTTP), RedirectRefused, or urllib.error.URLError / OSError for a server
    not reached.
    """
    with Deadline(seconds) as deadline:
        try:
            return _follow(request, deadline, cap)
        except (DeadlinePassed, BodyTooLarge, BrokenHttp) as exc:
            raise _after(deadline, exc) from None
        except http.client.RemoteDisconnected as exc:  # a ConnectionResetError too
            raise _after(deadline, BrokenHttp(f"RemoteDisconnected: {exc}")) from None
        except urllib.error.URLError as exc:
            if isinstance(exc.reason, http.client.HTTPException):
                raise _after(deadline, BrokenHttp(_name(exc.reason))) from None
            raise _after(deadline, exc) from None
        except (http.client.HTTPException, ValueError) as exc:  # LineTooLong, BadStatusLine ...
            raise _after(deadline, BrokenHttp(_name(exc))) from None
        except OSError as exc:
            raise _after(deadline, exc) from None


def _after(deadline: Deadline, error: Exception) -> Exception:
    """The error to raise: the deadline when it is what cut the exchange short.

    A socket timeout is the deadline too: each socket waits at most what is left of it.
    """
    reason = error.reason if isinstance(error, urllib.error.URLError) else error
    return DeadlinePassed() if deadline.expired or isinstance(reason, TimeoutError) else error


def _name(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
