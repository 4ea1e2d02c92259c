"""BoundedServer's life cycle: a stop that lands while it starts still lets it shut down."""

from __future__ import annotations

import socket
import threading
from typing import Any

import pytest

from gputui.exporter import connections
from gputui.exporter.connections import BoundedServer


class _SignalledWhileStarting(threading.Thread):
    """A worker thread whose start is where SIGTERM's SystemExit lands (the second one)."""

    started = 0

    def start(self) -> None:
        type(self).started += 1
        if type(self).started == 2:
            raise SystemExit(0)
        super().start()


def test_shutdown_returns_after_a_stop_while_the_workers_start(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`gputui exporter` stopped right after it said "serving" hung until SIGKILL: the
    SystemExit left serve_forever before its try, and shutdown() waited forever."""
    monkeypatch.setattr(connections.threading, "Thread", _SignalledWhileStarting)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    server = BoundedServer(listener, lambda *args: None)
    with pytest.raises(SystemExit):
        server.serve_forever()
    monkeypatch.undo()
    done = threading.Event()

    def shut() -> Any:
        server.shutdown()
        done.set()

    threading.Thread(target=shut, daemon=True).start()
    assert done.wait(30), "shutdown() never returned"
    assert listener.fileno() == -1  # closed
