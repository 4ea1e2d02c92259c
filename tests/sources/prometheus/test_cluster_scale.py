"""The cluster view at fleet scale: a bounded query load whatever the fleet's size,
the host table aggregated by Prometheus, GPUs and history only for the hosts on screen, the
default refresh no faster than the scrape interval, the ages tick redrawing only rows on screen.

Against a real Prometheus scraping generated dcgm-exporter pages (5 and 50 hosts of 8 GPUs).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from gputui.render.cluster_text import host_row
from gputui.sources.prometheus.series import VIEW_METRICS
from gputui.sources.prometheus.source import PrometheusSource
from gputui.tui.cluster_app import ClusterApp
from gputui.tui.screens.cluster import SortedTable
from tests.fleet import Fleet
from tests.prometheus_harness import (
    PROMETHEUS,
    PrometheusServer,
    StaticEndpoint,
    dcgm_text,
    stop_all,
)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        PROMETHEUS is None, reason="needs the prometheus binary (apt install prometheus)"
    ),
]
GPUS = 8


@dataclass
class Pages:
    prom: PrometheusServer
    pages: list[StaticEndpoint]
    hosts: list[str]

    def stop(self) -> None:
        self.prom.stop()
        stop_all(self.pages)


def start_pages(folder: Path, hosts: int, interval: str) -> Pages:
    names = [f"host-{i:03d}" for i in range(hosts)]
    pages = [
        StaticEndpoint(dcgm_text(n, GPUS, used_mib=lambda g, i=i: 1000.0 * ((g + i) % 8)))
        for i, n in enumerate(names)
    ]
    prom = PrometheusServer(folder, [p.address for p in pages], interval=interval).start()
    try:
        prom.wait_targets_up(60)
        prom.wait_for("DCGM_FI_DEV_FB_FREE", hosts * GPUS, 60)
    except BaseException:
        prom.stop()
        raise
    return Pages(prom, pages, names)


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pages]:
    f = start_pages(tmp_path_factory.mktemp("small"), 5, "2s")
    yield f
    f.stop()


@pytest.fixture(scope="module")
def large(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pages]:
    f = start_pages(tmp_path_factory.mktemp("large"), 50, "1s")
    yield f
    f.stop()


def view_source(url: str) -> PrometheusSource:
    return PrometheusSource(url, metrics=VIEW_METRICS)  # what run_cluster opens


async def wait_until(pilot: Any, ok: Any, what: str, timeout: float = 10.0) -> None:
    for _ in range(int(timeout / 0.05)):
        if ok():
            return
        await pilot.pause(0.05)
    raise AssertionError(f"not {what} after {timeout:g} s")


def on_screen_keys(table: SortedTable) -> set[str]:
    """The rows of the table the terminal shows (below its header)."""
    top = int(table.scroll_offset.y)
    return set(table.keys[top : top + table.size.height - table.header_height])


def column(table: SortedTable, key: str) -> list[str]:
    return [str(table.get_cell(row, key)) for row in table.keys]


class Recorder:
    """Wraps a client's query and query_range: the hosts each answer named."""

    def __init__(self, source: PrometheusSource) -> None:
        self.client = source.client
        self.gpu_hosts: set[str] = set()  # hosts of series that carry a gpu label
        self.range_hosts: set[str] = set()
        query, query_range = self.client.query, self.client.query_range

        def recorded_query(expr: str, at: float | None = None) -> Any:
            answer = query(expr, at)
            for s in answer:
                if "gpu" in s.labels and "stat" not in s.labels:  # the host table's are by host
                    self.gpu_hosts.add(s.labels.get("Hostname", "?"))
            return answer

        def recorded_range(expr: str, start: float, end: float, step: float) -> Any:
            answer = query_range(expr, start, end, step)
            self.range_hosts.update(s.labels.get("Hostname", "?") for s in answer)
            return answer

        self.client.query = recorded_query  # type: ignore[method-assign]
        self.client.query_range = recorded_range  # type: ignore[method-assign]

    def clear(self) -> None:
        self.gpu_hosts.clear()
        self.range_hosts.clear()


async def requests_per_refresh(url: str) -> list[int]:
    app = ClusterApp(view_source(url), interval=0.3)
    async with app.run_test(size=(120, 30)) as pilot:
        await wait_until(pilot, lambda: app.refreshes >= 6, "refreshed 6 times", 20)
        return app.requests[2:6]  # past the first (targets, history) and the first scroll-in


async def test_requests_per_refresh_do_not_grow_with_the_fleet(small: Pages, large: Pages) -> None:
    few, many = (
        await requests_per_refresh(small.prom.url),
        await requests_per_refresh(large.prom.url),
    )
    assert few == many, (few, many)  # 5 hosts or 50: the same requests
    assert max(many) <= 5, many  # the host table (with up) in 3, the on-screen GPUs in 2


async def test_gpus_and_history_are_read_only_for_the_hosts_on_screen(large: Pages) -> None:
    source = view_source(large.prom.url)
    seen = Recorder(source)
    app = ClusterApp(source, interval=0.5)
    async with app.run_test(size=(120, 30)) as pilot:
        await wait_until(pilot, lambda: app.refreshes >= 2, "refreshed")
        hosts = app.screen.query_one("#cluster-hosts", SortedTable)
        gpus = app.screen.query_one("#cluster-gpus", SortedTable)
        # the host table: every host, its figures summed by Prometheus
        assert column(hosts, "host") == large.hosts
        assert set(column(hosts, "gpus")) == {str(GPUS)}
        on_screen = on_screen_keys(hosts)
        assert 0 < len(on_screen) < 25
        await wait_until(
            pilot,
            lambda: {k.split("\x00")[0] for k in gpus.keys} == on_screen,
            "showing the GPUs of the hosts on screen",
        )
        # the first refresh, before the table is laid out, reads a terminal's height of hosts
        assert on_screen <= seen.gpu_hosts and len(seen.gpu_hosts) <= 30
        assert seen.range_hosts and len(seen.range_hosts) <= 30  # the sparklines' history
        seen.clear()
        done = app.refreshes
        await wait_until(pilot, lambda: app.refreshes >= done + 2, "refreshed twice more")
        assert seen.gpu_hosts == on_screen  # from then on: the hosts on screen only
        await pilot.press("ctrl+end")  # the last hosts come on screen
        await wait_until(
            pilot, lambda: f"{large.hosts[-1]}\x000" in gpus.keys, "reading the last host"
        )
        on_screen = on_screen_keys(hosts)
        assert large.hosts[-1] in on_screen and large.hosts[0] not in on_screen
        await wait_until(
            pilot, lambda: (large.hosts[-1], 0) in app.history, "its history read at once"
        )
        assert {h for h, _ in app.history} <= on_screen  # read for the hosts now on screen
        seen.clear()
        done = app.refreshes
        await wait_until(pilot, lambda: app.refreshes >= done + 2, "refreshed twice more")
        assert seen.gpu_hosts == on_screen
        # its GPU rows come from the per-GPU reading (8 of them, with their sparklines)
        last = [k for k in gpus.keys if k.startswith(large.hosts[-1] + "\x00")]
        assert len(last) == GPUS
        assert all(str(gpus.get_cell(k, "history")).strip() for k in last)


async def test_the_ages_tick_redraws_only_the_rows_on_screen(large: Pages) -> None:
    clock = [0.0]
    app = ClusterApp(view_source(large.prom.url), interval=3600, monotonic=lambda: clock[0])
    async with app.run_test(size=(120, 30)) as pilot:
        await wait_until(pilot, lambda: app.refreshes >= 1, "refreshed")
        await pilot.pause(0.2)
        hosts = app.screen.query_one("#cluster-hosts", SortedTable)
        updated: list[str] = []
        update_cell = hosts.update_cell

        def counting(row_key: Any, column_key: Any, value: Any, **kw: Any) -> None:
            updated.append(str(row_key))
            update_cell(row_key, column_key, value, **kw)

        hosts.update_cell = counting  # type: ignore[method-assign]
        clock[0] += 7.0  # every host is 7 s older: every age cell differs
        await pilot.pause(1.3)  # the once-a-second tick
        on_screen = on_screen_keys(hosts)
        assert updated, "the ages were not redrawn"
        assert set(updated) <= on_screen and len(on_screen) < len(large.hosts)


async def test_the_default_refresh_follows_the_scrape_interval(small: Pages) -> None:
    app = ClusterApp(view_source(small.prom.url), interval=1.0, follow_scrape=True)
    async with app.run_test(size=(120, 30)) as pilot:
        await wait_until(pilot, lambda: app.refreshes >= 1, "refreshed")
        assert app.interval == 2.0  # Prometheus scrapes every 2 s: no faster than that
        assert "every 2 s (scrape interval)" in str(app.screen.query_one("#cluster-info").content)
        await pilot.press("minus")  # the user's pace wins from then on
        assert app.interval == 5.0 and not app.follow_scrape
    explicit = ClusterApp(view_source(small.prom.url), interval=1.0)  # --interval 1 given
    async with explicit.run_test(size=(120, 30)) as pilot:
        await wait_until(pilot, lambda: explicit.refreshes >= 1, "refreshed")
        assert explicit.interval == 1.0


def test_interval_given_on_the_command_line() -> None:
    from gputui.tui.cluster_app import interval_given

    assert interval_given(["--prometheus", "http://p:9090", "--interval", "2"])
    assert interval_given(["--interval=2"]) and interval_given(["--int", "5"])
    assert not interval_given(["--prometheus", "http://p:9090"])
    assert not interval_given(["--prometheus", "http://p:9090", "--match", 'job="gpu"'])


def test_the_aggregated_host_table_agrees_with_the_per_gpu_reading(fleet: Fleet) -> None:
    """The fleet has a mixed host (gputui and dcgm for one GPU), dcgm-exporter 4.x labels,
    NaN temperatures, a missing power metric and a duplicated series."""
    import time

    from gputui.sources.prometheus.view import ViewReader

    at = time.time()  # both read at one evaluation time: the same samples
    full = PrometheusSource(fleet.prom.url, clock=lambda: at).poll_cluster()
    reader = ViewReader(PrometheusSource(fleet.prom.url, clock=lambda: at))
    reader.ask(["node-a", "dgx-1"])
    view = reader.poll()
    assert [h.name for h in view.hosts] == [h.name for h in full.hosts]
    assert len(full.hosts) == 4
    for h in full.hosts:
        want = host_row(h)
        got = next(s for s in view.hosts if s.name == h.name).row()
        del want["processes"], got["processes"]  # counted from the per-GPU reading only
        assert got == want, h.name
    # the hosts asked for come GPU by GPU as the whole-fleet reading has them
    assert sorted(h.name for h in view.detail.hosts) == ["dgx-1", "node-a"]
    for h in view.detail.hosts:
        whole = next(x for x in full.hosts if x.name == h.name)

        assert h == whole
