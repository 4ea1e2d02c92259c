"""One GET to a Prometheus server with a total deadline and a cap on the body.

Why not `urlopen(timeout=...)` alone: a socket timeout restarts at every
byte, so a server (or a proxy in front of it) that sends one byte every two
seconds holds a refresh for ever, and `response.read()` reads a 150 MB body
whole. Here a timer shuts the connection down when the query's deadline
passes, whatever phase it is in (connect, TLS handshake, status line,
headers, body), and the body is read in chunks up to the cap.

urllib still does the HTTP work (proxies from the environment, redirects,
Basic auth headers): only its connections are made through `_watched`, which
keeps a duplicate of each socket so the timer can shut it down even after TLS
has taken the original over.
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

MAX_BODY_BYTES = 64 << 20  # far above the answer for thousands of GPUs; a bound on memory
MAX_ERROR_BODY_BYTES = 64 << 10  # an error answer is read only for its message
_CHUNK = 1 << 16


class DeadlinePassed(Exception):
    """The whole exchange took longer than the query's deadline."""


class BodyTooLarge(Exception):
    """The answer is over the cap (declared by Content-Length, or read so far)."""


class BrokenHttp(Exception):
    """What http.client or urllib raise for a response that is not valid HTTP."""


@dataclass(frozen=True, slots=True)
class Answer:
    status: int
    reason: str
    body: bytes


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


class _CappedBody:
    """A redirect's body as urllib's redirect handler sees it: read at most the error cap."""

    def __init__(self, fp: Any) -> None:
        self._fp = fp

    def read(self, amt: int = -1) -> bytes:
        limit = MAX_ERROR_BODY_BYTES if amt is None or amt < 0 else min(amt, MAX_ERROR_BODY_BYTES)
        data: bytes = self._fp.read(limit)
        return data

    def __getattr__(self, name: str) -> Any:
        return getattr(self._fp, name)


class _RedirectHandler(urllib.request.HTTPRedirectHandler):
    """urllib reads a redirect's whole body before it follows the redirect: not here."""

    def http_error_302(self, req: Any, fp: Any, code: int, msg: str, headers: Any) -> Any:
        return super().http_error_302(req, _CappedBody(fp), code, msg, headers)  # type: ignore[arg-type]

    http_error_301 = http_error_303 = http_error_307 = http_error_308 = http_error_302


def _opener(deadline: Deadline) -> urllib.request.OpenerDirector:
    """urllib's default chain for http(s) only: a redirect elsewhere (ftp:) is refused."""
    opener = urllib.request.OpenerDirector()
    for handler in (
        urllib.request.ProxyHandler(),
        urllib.request.UnknownHandler(),
        _HttpHandler(deadline),
        _HttpsHandler(deadline),
        urllib.request.HTTPDefaultErrorHandler(),
        _RedirectHandler(),
        urllib.request.HTTPErrorProcessor(),
    ):
        opener.add_handler(handler)
    return opener


def _read(response: Any, cap: int, deadline: Deadline) -> bytes:
    declared = response.headers.get("Content-Length") if response.headers else None
    if declared is not None and declared.strip().isdigit() and int(declared) > cap:
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


def get(request: urllib.request.Request, seconds: float, cap: int = MAX_BODY_BYTES) -> Answer:
    """The status and body of one GET, HTTP errors included (their body capped smaller).

    Raises DeadlinePassed, BodyTooLarge, BrokenHttp (the server's answer is not
    valid HTTP), or urllib.error.URLError / OSError for a server not reached.
    """
    with Deadline(seconds) as deadline:
        try:
            try:
                response = _opener(deadline).open(request, timeout=seconds)
            except urllib.error.HTTPError as exc:
                body = _read(exc, MAX_ERROR_BODY_BYTES, deadline) if exc.fp is not None else b""
                return Answer(exc.code, str(exc.reason), body)
            with response:
                return Answer(response.status, str(response.reason), _read(response, cap, deadline))
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
