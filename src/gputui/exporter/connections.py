"""The exporter's listening side: bounded connections, deadlines, TLS off the accept path.

Why not a thread per connection (wsgiref's / prometheus_client's threading
server): a client that connects and sends nothing, or half a ClientHello, or
a header a byte at a time, then holds a thread for as long as it likes, and
with the listening socket wrapped for TLS the handshake even ran inside
`accept()`, so one idle client stopped every scrape.

Here one thread (`serve_forever`) accepts and, without blocking, runs each
connection's TLS handshake and reads its request head. A connection costs no
thread until its whole head has arrived; then a fixed pool of workers answers
it. Every connection has one deadline from accept to the end of its head
(handshake included), so a slowloris client is cut off however it paces its
bytes, and the worker's write has a deadline of its own.

At most `max_connections` are held at once (being read, queued or answered).
Over that, new connections wait in the kernel's listen backlog, without a
thread or a buffer, so a burst of scrapes is answered in turn instead of
refused. While full, a connection that has sent no complete request for
`EVICT_AFTER_S` is closed to make room: a scraper sends its request within
milliseconds of connecting, so the oldest silent connection is the least
likely to be one.
"""

from __future__ import annotations

import contextlib
import errno
import queue
import selectors
import socket
import ssl
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from gputui.exporter import errorlog
from gputui.exporter.errorlog import short

BACKLOG = 1024  # the kernel caps it at net.core.somaxconn
MAX_HEAD_BYTES = 64 * 1024  # request line and headers; a scrape's are a few hundred bytes
EVICT_AFTER_S = 1.0
ACCEPTS_PER_WAKE = 64  # so one flood cannot starve the reads of held connections

Handler = Callable[[socket.socket, bytes, tuple[str, int], float], None]


@dataclass(frozen=True, slots=True)
class Limits:
    max_connections: int = 256
    workers: int = 8
    request_timeout_s: float = 10.0  # accept to the end of the request head, TLS included
    write_timeout_s: float = 10.0  # the whole response

    def __post_init__(self) -> None:
        if not 1 <= self.max_connections <= 4096:
            raise ValueError(f"max_connections {self.max_connections}: expected 1 to 4096")
        if not 1 <= self.workers <= 256:
            raise ValueError(f"workers {self.workers}: expected 1 to 256")
        if not 0 < self.request_timeout_s <= 3600 or not 0 < self.write_timeout_s <= 3600:
            raise ValueError("timeouts: expected more than 0 and at most 3600 s")


@dataclass(slots=True)
class _Pending:
    """A connection whose handshake or request head is still arriving."""

    sock: socket.socket
    address: tuple[str, int]
    born: float
    handshaken: bool
    head: bytearray = field(default_factory=bytearray)
    wants_write: bool = False  # TLS needs to send before it can go on


@dataclass(slots=True)
class Counters:
    """What the server has done, for tests and for a look from outside."""

    accepted: int = 0
    answered: int = 0
    timed_out: int = 0  # head not complete within request_timeout_s
    evicted: int = 0  # closed while full, to make room
    refused: int = 0  # bad handshake, head too big, closed early


def _head_complete(head: bytearray, old_len: int) -> bool:
    start = max(0, old_len - 3)
    return head.find(b"\r\n\r\n", start) >= 0 or head.find(b"\n\n", start) >= 0


def _close(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.close()


class BoundedServer:
    """Accepts on `listener` and calls `handler(sock, head, address, write_deadline)` on a worker."""

    def __init__(
        self,
        listener: socket.socket,
        handler: Handler,
        *,
        tls: ssl.SSLContext | None = None,
        limits: Limits | None = None,
    ) -> None:
        self.listener = listener
        self.listener.setblocking(False)
        self.handler = handler
        self.tls = tls
        self.limits = limits or Limits()
        self.counters = Counters()
        self._pending: dict[int, _Pending] = {}  # insertion order is age order
        self._answering = 0  # queued for or held by a worker
        self._lock = threading.Lock()
        self._jobs: queue.SimpleQueue[tuple[socket.socket, bytes, tuple[str, int]] | None] = (
            queue.SimpleQueue()
        )
        self._workers: list[threading.Thread] = []
        self._selector = selectors.DefaultSelector()
        self._listening = False
        self._accept_pause_until = 0.0
        self._stop = threading.Event()
        self._stopped = threading.Event()
        self._stopped.set()

    @property
    def held(self) -> int:
        with self._lock:
            return len(self._pending) + self._answering

    @property
    def thread_cap(self) -> int:
        """Threads this server runs while serving: the accepting one and the workers."""
        return 1 + self.limits.workers

    def serve_forever(self) -> None:
        # All of it inside the try: SIGTERM (SystemExit in the main thread) may land while
        # the workers start, and shutdown() then waits for the `_stopped` set below.
        try:
            self._stop.clear()
            self._stopped.clear()
            self._workers = []
            for i in range(self.limits.workers):
                worker = threading.Thread(
                    target=self._work, name=f"exporter-worker-{i}", daemon=True
                )
                worker.start()
                self._workers.append(worker)
            while not self._stop.is_set():
                self._step()
        finally:
            self._wind_down()
            self._stopped.set()

    def shutdown(self) -> None:
        """Stop serve_forever (from another thread, or after it left) and close the listener."""
        self._stop.set()
        self._stopped.wait()
        self._selector.close()
        _close(self.listener)

    # --- the accepting thread -------------------------------------------------------------

    def _step(self) -> None:
        now = time.monotonic()
        self._expire(now)
        want = self._room(now) and now >= self._accept_pause_until
        if want != self._listening:
            if want:
                self._selector.register(self.listener, selectors.EVENT_READ, None)
            else:
                self._selector.unregister(self.listener)
            self._listening = want
        timeout = 0.5 if want else 0.05  # not listening: look again soon for room
        if self._pending:
            oldest = next(iter(self._pending.values()))
            timeout = min(timeout, max(0.0, oldest.born + self.limits.request_timeout_s - now))
        for key, _ in self._selector.select(timeout):
            if key.data is None:
                self._accept()
            else:
                self._advance(key.data)

    def _room(self, now: float) -> bool:
        if self.held < self.limits.max_connections:
            return True
        return self._evictable(now) is not None

    def _evictable(self, now: float) -> _Pending | None:
        for pending in self._pending.values():
            return pending if now - pending.born >= EVICT_AFTER_S else None
        return None

    def _expire(self, now: float) -> None:
        limit = self.limits.request_timeout_s
        while self._pending:
            oldest = next(iter(self._pending.values()))
            if now - oldest.born < limit:
                return
            self._drop(oldest)
            self.counters.timed_out += 1

    def _accept(self) -> None:
        for _ in range(ACCEPTS_PER_WAKE):
            now = time.monotonic()
            full = self.held >= self.limits.max_connections
            victim = self._evictable(now) if full else None
            if full and victim is None:
                return
            try:
                sock, address = self.listener.accept()
            except BlockingIOError:
                return
            except OSError as exc:
                if exc.errno in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM):
                    self._accept_pause_until = now + 0.1  # out of descriptors: let some close
                    return
                continue  # ECONNABORTED and the like: that client left
            if victim is not None:
                self._drop(victim)
                self.counters.evicted += 1
            self.counters.accepted += 1
            self._admit(sock, address, now)

    def _admit(self, sock: socket.socket, address: tuple[str, int], now: float) -> None:
        try:
            sock.setblocking(False)
            if self.tls is not None:
                sock = self.tls.wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
        except (OSError, ValueError):
            _close(sock)
            return
        pending = _Pending(sock, address, now, handshaken=self.tls is None)
        with self._lock:
            self._pending[sock.fileno()] = pending
        self._selector.register(sock, selectors.EVENT_READ, pending)

    def _advance(self, pending: _Pending) -> None:
        """Move the handshake or the head on as far as the bytes that arrived allow."""
        sock = pending.sock
        try:
            if pending.wants_write:
                pending.wants_write = False
                self._selector.modify(sock, selectors.EVENT_READ, pending)
            if not pending.handshaken and isinstance(sock, ssl.SSLSocket):
                sock.do_handshake()
                pending.handshaken = True
            while True:  # TLS may hold decrypted bytes the selector cannot see
                chunk = sock.recv(16384)
                if not chunk:
                    self._drop(pending)
                    self.counters.refused += 1
                    return
                old_len = len(pending.head)
                pending.head += chunk
                if _head_complete(pending.head, old_len):
                    self._dispatch(pending)
                    return
                if len(pending.head) > MAX_HEAD_BYTES:
                    self._drop(pending)
                    self.counters.refused += 1
                    return
        except (ssl.SSLWantReadError, BlockingIOError):
            return
        except ssl.SSLWantWriteError:
            pending.wants_write = True
            self._selector.modify(sock, selectors.EVENT_WRITE, pending)
        except (OSError, ValueError):  # a failed handshake (ssl.SSLError) included
            self._drop(pending)
            self.counters.refused += 1

    def _forget(self, pending: _Pending) -> None:
        with contextlib.suppress(KeyError, ValueError):
            self._selector.unregister(pending.sock)
        with self._lock:
            self._pending.pop(pending.sock.fileno(), None)

    def _drop(self, pending: _Pending) -> None:
        self._forget(pending)
        _close(pending.sock)

    def _dispatch(self, pending: _Pending) -> None:
        self._forget(pending)
        with self._lock:
            self._answering += 1
        self._jobs.put((pending.sock, bytes(pending.head), pending.address))

    def _wind_down(self) -> None:
        for pending in list(self._pending.values()):
            self._drop(pending)
        if self._listening:
            self._selector.unregister(self.listener)
            self._listening = False
        for _ in self._workers:
            self._jobs.put(None)
        for worker in self._workers:
            worker.join(timeout=self.limits.write_timeout_s + 1)

    # --- the workers ----------------------------------------------------------------------

    def _work(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                return
            sock, head, address = job
            try:
                if not self._stop.is_set():
                    self.handler(
                        sock, head, address, time.monotonic() + self.limits.write_timeout_s
                    )
                    with self._lock:
                        self.counters.answered += 1
            except OSError:  # the client left or stopped reading: its loss alone
                pass
            except Exception as exc:  # noqa: BLE001 - one broken connection must not end a worker
                errorlog.LOG.line(f"connection failed ({type(exc).__name__}: {short(exc, 80)})")
            finally:
                _close(sock)
                with self._lock:
                    self._answering -= 1
