"""The cluster view's per-host queries: host labels quoted for PromQL whatever they hold, a
refused query said (never a host dropped without a word), against a real Prometheus too."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "fuzz"))
import prometheus_fake as fake  # noqa: E402

from gputui.core.textsafe import visible  # noqa: E402
from gputui.sources.prometheus.source import PrometheusSource  # noqa: E402
from gputui.sources.prometheus.view import ViewReader, _regex  # noqa: E402
from tests.prometheus_harness import PROMETHEUS, PrometheusServer, StaticEndpoint, dcgm_text  # noqa: E402

HOSTILE = [
    "node\nb",
    'node"q',
    "node\\b",
    "gpu.01",
    "a|b",
    "(x)*+?[]{}^$",
    "tab\there",
    "cr\rlf",
    "bidi\u202eevil",
    "nul\x00",
    "ünïcode",
    "emoji\U0001f600",
]


def _promql_string(literal: str) -> str:
    """What PromQL reads from a double-quoted literal. Its escapes (Go's \\n \\t \\" \\\\
    \\uXXXX) are JSON's for these; like PromQL, JSON refuses a raw control character."""
    assert literal.startswith('"') and literal.endswith('"') and "\\U" not in literal
    return str(json.loads(literal))


@pytest.mark.parametrize("name", HOSTILE)
def test_a_host_label_is_quoted_for_promql_and_matched_exactly(name: str) -> None:
    names = [name, "node-a", "other"]
    pattern = _promql_string(_regex(names))
    for n in names:
        assert re.fullmatch(pattern, n), (n, pattern)
    assert not re.fullmatch(pattern, name + "x")
    assert not re.fullmatch(pattern, "node-ab")


# --- a refused query is said --------------------------------------------------------------


@pytest.fixture
def prom() -> Iterator[fake.FakePrometheus]:
    srv = fake.FakePrometheus()
    yield srv
    srv.stop()


def _summary_reply(query: str) -> fake.Reply:
    a = {"Hostname": "node-a", "instance": "node-a:9400"}
    stats = {"gpus": "2", "seen": "1000", "up": "1"}
    items = [
        {"metric": {**a, "stat": k} if k != "up" else {"instance": a["instance"], "stat": k},
         "value": [1000.0, v]}
        for k, v in stats.items()
    ]  # fmt: skip
    return fake.json_reply({"status": "success", "data": {"resultType": "vector", "result": items}})


def test_a_refused_detail_query_is_said_and_the_host_table_kept(prom: fake.FakePrometheus) -> None:
    def respond(path: str, params: dict[str, str]) -> fake.Reply:
        query = params.get("query", "")
        if "modelName" in query or "gputui_metric" in query:  # the GPUs of the hosts asked
            return fake.json_reply(
                {"status": "error", "errorType": "bad_data", "error": "parse error"},
                status=b"HTTP/1.1 400 Bad Request",
            )
        if path.endswith("/query") and '"stat"' in query:
            return _summary_reply(query)
        return fake.fleet_reply(path, params)

    prom.serve(respond)
    reader = ViewReader(PrometheusSource(prom.url))
    view = reader.poll(first=10)
    assert [h.name for h in view.hosts] == ["node-a"]
    assert view.detail.hosts == ()
    assert (
        view.refused is not None and "parse error" in view.refused and "bad query" in view.refused
    )


# --- a real Prometheus ----------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.skipif(PROMETHEUS is None, reason="needs the prometheus binary")
def test_a_host_whose_label_holds_a_newline_shows_its_gpus(tmp_path: Path) -> None:
    hosts = {"plain": "node-a", "newline": "node\\nb", "quote": 'node\\"c', "regex": "gpu.(1)"}
    pages = [StaticEndpoint(dcgm_text(label, 2)) for label in hosts.values()]
    prom = PrometheusServer(tmp_path / "prometheus", [p.address for p in pages]).start()
    try:
        prom.wait_targets_up()
        prom.wait_for("DCGM_FI_DEV_FB_FREE", 2 * len(pages))
        reader = ViewReader(PrometheusSource(prom.url))
        view = reader.poll(first=10)
        shown = {"node-a", visible("node\nb"), 'node"c', "gpu.(1)"}
        assert {h.name for h in view.hosts} == shown
        assert view.refused is None
        assert {h.name: len(h.gpus) for h in view.detail.hosts} == dict.fromkeys(shown, 2)
    finally:
        prom.stop()
        for p in pages:
            p.stop()
