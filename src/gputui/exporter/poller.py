"""One poll per interval on a background thread; scrapes read the last poll's families.

Why: NVML calls can take tens of milliseconds (a hung GPU far longer), and
several Prometheus servers (HA pairs, a test instance) may scrape the same
host. Polling per scrape would multiply NVML load and make scrape latency
hostage to the driver. Here a scrape only serialises families built once per
poll; the exporter's own `gputui_exporter_last_poll_timestamp_seconds` tells
a stuck poller apart from a quiet GPU.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING

from prometheus_client.core import Metric
from prometheus_client.registry import Collector

from gputui.exporter.families import CardName, build_families, exporter_families
from gputui.model.snapshot import Snapshot
from gputui.sources.base import Source

if TYPE_CHECKING:
    from gputui.catalog import Catalog
    from gputui.fit import AnyModel

log = logging.getLogger("gputui.exporter")


class Poller(Collector):
    """Polls `source` every `interval` seconds; is the registry's collector."""

    def __init__(
        self,
        source: Source,
        *,
        interval: float,
        hostname: str | None = None,
        full_cmdline: bool = False,
        catalog: Catalog | None = None,
        models: Sequence[AnyModel] = (),
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.source = source
        self.interval = interval
        self.hostname = hostname
        self.full_cmdline = full_cmdline
        self.catalog = catalog
        self.models = tuple(models)
        self.clock = clock
        self.polls = 0
        self.errors = 0
        self.generation = 0  # bumped whenever what collect() yields changes
        self.last_error: str | None = None
        self._families: list[Metric] = []
        self._last_poll: float | None = None
        self._poll_seconds: float | None = None
        self._hostname: str | None = hostname
        self._cards: dict[tuple[int, str | None], CardName] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.first_poll = threading.Event()

    # --- polling ------------------------------------------------------------------
    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="gputui-exporter-poll", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def _run(self) -> None:
        next_at = time.monotonic()
        while not self._stop.is_set():
            self.poll_once()
            next_at += self.interval
            now = time.monotonic()
            if next_at < now:  # a poll overran: skip the missed slots rather than bunch up
                next_at = now + self.interval
            self._stop.wait(next_at - now)

    def poll_once(self) -> None:
        start = time.perf_counter()
        try:
            snap = self.source.poll()
            families = self._families_for(snap)
        except Exception as exc:  # keep serving the last good poll; count and log the failure
            self.errors += 1
            self.generation += 1  # the error counter changed
            self.last_error = f"{type(exc).__name__}: {exc}"
            log.warning("poll failed: %s", self.last_error)
        else:
            with self._lock:
                self._families = families
                self._last_poll = snap.timestamp
                self._poll_seconds = time.perf_counter() - start
                self.generation += 1
            self.polls += 1
        finally:
            self.first_poll.set()

    def _families_for(self, snap: Snapshot) -> list[Metric]:
        hostname = self.hostname or (snap.host.hostname if snap.host else None) or _hostname()
        self._hostname = hostname
        cards: dict[int, CardName] = {}
        fit = []
        if self.catalog is not None:
            cards = self._card_names(snap, self.catalog)
            if self.models:
                from gputui.exporter.fitting import fit_answers

                fit = fit_answers(snap, self.models, self.catalog)
        return build_families(
            snap,
            hostname=hostname,
            fit=fit,
            cards=cards,
            full_cmdline=self.full_cmdline,
        )

    def _card_names(self, snap: Snapshot, catalog: Catalog) -> dict[int, CardName]:
        """Matched once per (index, UUID): the catalog lookup is not free and never changes."""
        missing = [d for d in snap.devices if (d.index, d.info.uuid) not in self._cards]
        if missing:
            from gputui.exporter.fitting import card_names

            found = card_names(snap, catalog)
            for d in missing:
                self._cards[(d.index, d.info.uuid)] = found[d.index]
        return {d.index: self._cards[(d.index, d.info.uuid)] for d in snap.devices}

    # --- scraping -----------------------------------------------------------------
    def collect(self) -> Iterator[Metric]:
        with self._lock:
            families = self._families
            last, seconds = self._last_poll, self._poll_seconds
        yield from families
        yield from exporter_families(
            last_poll=last,
            poll_seconds=seconds,
            interval=self.interval,
            errors=self.errors,
            source=self.source.name,
            hostname=self._hostname,
        )


def _hostname() -> str:
    import socket

    return socket.gethostname()
