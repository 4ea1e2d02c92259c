"""Faults with a real Prometheus: a host going stale, an exporter killed, Prometheus restarted.

A fleet of its own (these tests break it): two `gputui exporter` processes,
a dcgm page whose samples carry a frozen timestamp (what a relay that
stopped updating looks like: Prometheus still scrapes it, the data is old),
and an exporter run in this process whose NVML poll can be made to hang.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from gputui.exporter.poller import Poller
from gputui.exporter.server import MetricsServer
from gputui.model.snapshot import Snapshot
from gputui.sources.prometheus.api import PrometheusUnreachable
from gputui.sources.prometheus.source import PrometheusSource
from gputui.sources.simulated.scenario import load_scenario
from gputui.sources.simulated.source import SimulatedSource
from gputui.tui.cluster_app import ClusterApp
from gputui.tui.screens.cluster import SortedTable
from tests.fleet import write_scenario
from tests.prometheus_harness import (
    PROMETHEUS,
    ExporterProcess,
    PrometheusServer,
    StaticEndpoint,
    dcgm_text,
)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(PROMETHEUS is None, reason="needs the prometheus binary (apt install prometheus)"),
]


class HangingSource:
    """The simulated GPUs, until `hang` is set: then poll() blocks, like a driver call that hangs."""

    name = "simulated"

    def __init__(self, path: Path) -> None:
        self.inner = SimulatedSource(load_scenario(path))
        self.hang = threading.Event()
        self.release = threading.Event()

    def poll(self) -> Snapshot:
        if self.hang.is_set():
            self.release.wait(60)
        return self.inner.poll()

    def close(self) -> None:
        pass


class FaultFleet:
    def __init__(self, folder: Path) -> None:
        self.hanging = HangingSource(write_scenario(folder, "node-c"))
        self.poller = Poller(self.hanging, interval=0.5)
        registry = CollectorRegistry(auto_describe=False)
        registry.register(self.poller)
        self.poller.start()
        server = MetricsServer(registry, "127.0.0.1", 0)
        server.start()
        self.node_c: MetricsServer | None = server
        self.exporters = {
            host: ExporterProcess(
                ["--source", "demo", "--scenario", str(write_scenario(folder, host)),
                 "--listen", "127.0.0.1:0", "--interval", "0.5"]
            )  # fmt: skip
            for host in ("node-a", "node-b")
        }
        frozen_ms = int(time.time() * 1000)
        self.frozen = StaticEndpoint(dcgm_text("relay-1", 2, timestamp_ms=frozen_ms))
        targets = [e.address for e in self.exporters.values()] + [self.frozen.address]
        targets.append(f"127.0.0.1:{server.port}")
        self.prom = PrometheusServer(folder / "prometheus", targets).start()
        self.prom.wait_targets_up()
        self.prom.wait_for("DCGM_FI_DEV_FB_FREE", 8)

    def stop(self) -> None:
        self.hanging.release.set()
        self.poller.stop()
        if self.node_c is not None:
            self.node_c.shutdown()
        self.prom.stop()
        for e in self.exporters.values():
            e.stop()
        self.frozen.stop()


@pytest.fixture(scope="module")
def faults(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FaultFleet]:
    f = FaultFleet(tmp_path_factory.mktemp("faults"))
    yield f
    f.stop()


def states(source: PrometheusSource) -> dict[str, str]:
    return {h.name: h.state for h in source.poll_cluster().hosts}


def wait_state(source: PrometheusSource, host: str, state: str, timeout: float = 15) -> dict[str, str]:
    deadline = time.monotonic() + timeout
    seen: dict[str, str] = {}
    while time.monotonic() < deadline:
        seen = states(source)
        if seen.get(host) == state:
            return seen
        time.sleep(0.2)
    raise AssertionError(f"{host} not {state}: {seen}")


def test_samples_older_than_two_scrape_intervals_are_stale(faults: FaultFleet) -> None:
    source = PrometheusSource(faults.prom.url)
    seen = wait_state(source, "relay-1", "stale")
    assert seen["node-a"] == seen["node-b"] == "up"
    relay = next(h for h in source.poll_cluster().hosts if h.name == "relay-1")
    assert relay.age_s is not None and relay.age_s > 2.0  # 1 s scrapes


def test_exporter_hung_in_nvml_goes_stale_then_down_when_killed(faults: FaultFleet) -> None:
    source = PrometheusSource(faults.prom.url)
    assert states(source)["node-c"] == "up"
    faults.hanging.hang.set()  # the poller blocks; /metrics keeps serving the last poll
    seen = wait_state(source, "node-c", "stale")
    assert seen["node-a"] == "up"
    assert faults.prom.targets_up()  # Prometheus still scrapes it fine: only the data is old
    assert faults.node_c is not None
    faults.node_c.shutdown()  # then the exporter goes away altogether
    faults.node_c = None
    wait_state(source, "node-c", "down")


def test_killed_exporter_host_goes_down_and_keeps_its_last_numbers(faults: FaultFleet) -> None:
    source = PrometheusSource(faults.prom.url)
    before = {h.name: h for h in source.poll_cluster().hosts}
    assert before["node-b"].state == "up"
    faults.exporters["node-b"].stop()
    seen = wait_state(source, "node-b", "down")
    assert seen["node-a"] == "up"
    after = {h.name: h for h in source.poll_cluster().hosts}
    down = after["node-b"]
    assert [g.index for g in down.gpus] == [0, 1]  # last data kept, marked down
    assert down.age_s is not None and down.age_s >= 0
    assert after["node-a"].state == "up"


async def test_prometheus_stopped_then_restarted_banner_and_recovery(faults: FaultFleet) -> None:
    app = ClusterApp(PrometheusSource(faults.prom.url), interval=0.5)
    async with app.run_test(size=(150, 45)) as pilot:
        for _ in range(100):
            if app.refreshes:
                break
            await pilot.pause(0.05)
        hosts = app.screen.query_one("#cluster-hosts", SortedTable)
        shown = list(hosts.keys)
        assert "node-a" in shown
        faults.prom.stop()
        # The first failure may catch the server while it closes ("Connection reset by
        # peer"); wait for the one a stopped server gives, as every later retry does.
        for _ in range(200):
            if app.last_error and "Connection refused" in app.last_error:
                break
            await pilot.pause(0.05)
        banner = app.screen.query_one("#cluster-banner")
        assert not banner.has_class("hidden")
        text = str(banner.content)
        assert "Prometheus unreachable" in text and "Connection refused" in text
        assert "showing data from" in text
        assert list(hosts.keys) == shown and hosts.has_class("outdated")  # kept, greyed
        delays = [app.backoff.delay()]
        failures = app.backoff.failures
        for _ in range(120):
            await pilot.pause(0.05)
            if app.backoff.failures > failures:
                break
        delays.append(app.backoff.delay())
        assert delays[1] > delays[0]  # backing off
        faults.prom.start()
        for _ in range(300):
            if app.last_error is None:
                break
            await pilot.pause(0.05)
        assert app.last_error is None
        assert banner.has_class("hidden") and not hosts.has_class("outdated")


def test_one_shot_commands_report_unreachable_prometheus(faults: FaultFleet) -> None:
    source = PrometheusSource(faults.prom.url)
    faults.prom.stop()
    try:
        with pytest.raises(PrometheusUnreachable, match="Connection refused"):
            source.poll_cluster()
    finally:
        faults.prom.start()
