"""Broken answers from a fake Prometheus: one line naming the query, or N/A, never a traceback.

The cluster reader: a total deadline per query, a cap on the body,
http.client's errors as "the server sent a broken response", the shapes of
the Prometheus HTTP API checked, deep JSON and endless integers refused, and
non-finite or absurd sample values shown as N/A. Each case is served by a
fake server on 127.0.0.1 (tests/fuzz/prometheus_fake.py) to `gputui snapshot
--prometheus`, `gputui fit MODELS --prometheus` (in process, through
gputui.cli.main) and the cluster view (ClusterApp under Pilot).
"""

from __future__ import annotations

import contextlib
import io
import json
import socket
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "fuzz"))
import prometheus_fake as fake  # noqa: E402

from gputui.cli import main  # noqa: E402
from gputui.sources.prometheus import api  # noqa: E402
from gputui.sources.prometheus.api import DEFAULT_TIMEOUT_S, PrometheusClient  # noqa: E402
from gputui.sources.prometheus.source import PrometheusSource  # noqa: E402

REPO = Path(__file__).resolve().parents[3]
MODELS = str(
    REPO / "tests" / "fuzz" / "prometheus_models.toml"
)  # layer models only: no stderr note
MARGIN_S = 4.0  # a guard against a hang, not a speed target
CHECK_QUERY = 'count({__name__="gputui_gpu_up"}) or vector(0)'
SHORT_TIMEOUT_S = 1.0  # the deadline per query where a case waits it out (the real one: TLS test)


@pytest.fixture(scope="module")
def server() -> Iterator[fake.FakePrometheus]:
    srv = fake.FakePrometheus()
    yield srv
    srv.stop()


@pytest.fixture
def prom(server: fake.FakePrometheus) -> Iterator[fake.FakePrometheus]:
    yield server
    server.serve(lambda path, params: fake.fleet_reply(path, params))


def run_cli(
    argv: list[str], limit: float = DEFAULT_TIMEOUT_S + MARGIN_S
) -> tuple[int, str, str, float]:
    """gputui.cli.main in a thread, so that a hang (the code before the fix) fails, not blocks."""
    out, err = io.StringIO(), io.StringIO()
    result: dict[str, Any] = {}

    def body() -> None:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                result["code"] = main(argv)
            except BaseException as exc:  # a traceback: reported by the assertion below
                result["error"] = exc

    started = time.monotonic()
    thread = threading.Thread(target=body, daemon=True)
    thread.start()
    thread.join(limit)
    elapsed = time.monotonic() - started
    assert not thread.is_alive(), f"{argv[0]} still running after {limit:g} s"
    if "error" in result:
        raise result["error"]
    return result["code"], out.getvalue(), err.getvalue(), elapsed


COMMANDS = {
    "snapshot": lambda url: ["snapshot", "--prometheus", url],
    "snapshot-json": lambda url: ["snapshot", "--prometheus", url, "--json"],
    "fit": lambda url: ["fit", MODELS, "--prometheus", url],
}


def one_line(err: str) -> str:
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


def everywhere(reply: fake.Reply) -> fake.Responder:
    return lambda path, params: reply


def broken_at(kind: str, reply: fake.Reply) -> fake.Responder:
    """The fleet's answers, except for one query."""

    def respond(path: str, params: dict[str, str]) -> fake.Reply:
        return reply if fake.kind_of(path, params) == kind else fake.fleet_reply(path, params)

    return respond


def vector_of(*items: Any) -> fake.Reply:
    return fake.json_reply(
        {"status": "success", "data": {"resultType": "vector", "result": list(items)}}
    )


DIGITS = b"1" * 5000
BROKEN: dict[str, tuple[fake.Reply, int, str]] = {
    # name: (the answer to every query, exit code, what the line says)
    "slow-drip": (
        fake.Reply(b'{"status": "success"}', drip_s=2.0),
        1,
        f"no complete answer within {SHORT_TIMEOUT_S:g} s",
    ),
    "declared-150MB": (fake.Reply(b"{" * 1000, length=150 << 20, hold_s=8), 2, "over 64 MiB"),
    "streamed-70MB": (fake.Reply(b" " * (70 << 20), length=None), 2, "over 64 MiB"),
    "truncated": (
        fake.Reply(b'{"status": "succ', length=1000),
        2,
        "broken response (IncompleteRead",
    ),
    "short-length": (
        fake.Reply(b'{"status": "success", "data": {}}', length=12),
        2,
        "broken response: not JSON",
    ),
    "bad-status-line": (
        fake.Reply(raw=b"HTTQ/1.1 two hundred\r\n\r\n"),
        2,
        "broken response (BadStatusLine",
    ),
    "no-answer": (fake.Reply(raw=b""), 2, "broken response (RemoteDisconnected"),
    "long-header": (
        fake.Reply(b"{}", headers=(b"X-Long: " + b"a" * 70000,)),
        2,
        "broken response (LineTooLong",
    ),
    "200-headers": (
        fake.Reply(b"{}", headers=tuple(b"X-H%d: v" % i for i in range(200))),
        2,
        "more than 100 headers",
    ),
    "not-json": (fake.Reply(b"<html>hello</html>"), 2, "broken response: not JSON"),
    "not-utf8": (fake.Reply(b'{"status": "\xff\xfe"}'), 2, "broken response: not UTF-8"),
    "deep-json": (
        fake.Reply(b"[" * 50000 + b"]" * 50000),
        2,
        "nested 50000 deep (the bound is 32)",
    ),
    "endless-int": (
        fake.Reply(
            b'{"status": "success", "data": {"resultType": "vector", "result": [{"metric": {}, '
            b'"value": [' + DIGITS + b', "1"]}]}}'
        ),
        2,
        "an integer of 5000 digits",
    ),
    "result-not-a-list": (
        fake.json_reply(
            {"status": "success", "data": {"resultType": "vector", "result": {"a": 1}}}
        ),
        2,
        "data.result is not a list",
    ),
    "item-not-a-dict": (vector_of("gpu0"), 2, "data.result[0] is not an object"),
    "value-arity": (
        vector_of({"metric": {}, "value": [1, "2", "3"]}),
        2,
        "data.result[0].value is not",
    ),
    "value-swapped": (vector_of({"metric": {}, "value": ["1", 2]}), 2, "value[0] is not a number"),
    "value-not-a-number": (
        vector_of({"metric": {}, "value": [1, "lots"]}),
        2,
        "value[1] 'lots' is not",
    ),
    "value-arabic-digit": (
        vector_of({"metric": {}, "value": [1, "\u0661"]}),
        2,
        "value[1] '\u0661' is not a number",
    ),
    "metric-a-string": (
        vector_of({"metric": "gpu", "value": [1, "2"]}),
        2,
        "metric is not an object",
    ),
    "label-not-a-string": (
        vector_of({"metric": {"gpu": 0}, "value": [1, "2"]}),
        2,
        "metric.gpu is not a str",
    ),
    "scalar": (
        fake.json_reply(
            {"status": "success", "data": {"resultType": "scalar", "result": [1, "2"]}}
        ),
        2,
        "resultType is 'scalar', expected 'vector'",
    ),
}


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("case", BROKEN)
def test_a_broken_answer_is_one_line_naming_the_query(
    prom: fake.FakePrometheus, case: str, command: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if case == "slow-drip":  # the command's client reads it; other cases keep the real one
        monkeypatch.setattr(api, "DEFAULT_TIMEOUT_S", SHORT_TIMEOUT_S)
    reply, code, says = BROKEN[case]
    prom.serve(everywhere(reply))
    got, out, err, elapsed = run_cli(COMMANDS[command](prom.url))
    line = one_line(err)
    assert (got, out) == (code, ""), line
    assert says in line and f"(query {CHECK_QUERY})" in line, line
    assert elapsed < DEFAULT_TIMEOUT_S + MARGIN_S


@pytest.mark.slow  # waits out the client's real deadline (DEFAULT_TIMEOUT_S)
def test_the_deadline_covers_the_tls_handshake() -> None:
    """An https:// URL whose server drips a TLS record: the handshake counts against the query's
    deadline and ends as it does, naming the query (it was "cannot reach ...: handshake timed out")."""
    record = b"\x16\x03\x03\x40\x00" + b"\x02" * 200  # a handshake record of 16 KiB announced
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def drip() -> None:
        conn, _ = listener.accept()
        with conn, contextlib.suppress(OSError):
            for i in range(len(record)):
                if stop.wait(1.0):
                    return
                conn.sendall(record[i : i + 1])

    threading.Thread(target=drip, daemon=True).start()
    try:
        url = f"https://127.0.0.1:{listener.getsockname()[1]}"
        code, out, err, elapsed = run_cli(COMMANDS["snapshot"](url))
    finally:
        stop.set()
        listener.close()
    line = one_line(err)
    assert (code, out) == (1, ""), line
    assert f"no complete answer within {DEFAULT_TIMEOUT_S:g} s" in line, line
    assert elapsed < DEFAULT_TIMEOUT_S + MARGIN_S


LATER: dict[str, tuple[str, fake.Reply, str]] = {
    # a query after the first one: (its kind, its answer, what the line says)
    "targets-not-a-list": (
        "targets",
        fake.json_reply({"status": "success", "data": {"activeTargets": "all"}}),
        "/api/v1/targets: not a Prometheus API answer: data.activeTargets is not a list",
    ),
    "targets-interval-a-number": (
        "targets",
        fake.json_reply({"status": "success", "data": {"activeTargets": [{"scrapeInterval": 15}]}}),
        "data.activeTargets[0].scrapeInterval is not a string",
    ),
    "fb-free-metric-a-list": (
        "metric:DCGM_FI_DEV_FB_FREE",
        vector_of({"metric": ["gpu"], "value": [1, "2"]}),
        # memory keeps its MIG device's labels (a MIG GPU has one series per device)
        "query max by (Hostname, hostname, instance, gpu, GPU_I_ID, GPU_I_PROFILE, mig) "
        '({__name__="DCGM_FI_DEV_FB_FREE"})',
    ),
    "fresh-truncated": (
        "fresh",
        fake.Reply(b'{"status": "success", "da', length=500),
        "IncompleteRead",
    ),
}


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("case", LATER)
def test_a_broken_answer_to_a_later_query_names_that_query(
    prom: fake.FakePrometheus, case: str, command: str
) -> None:
    kind, reply, says = LATER[case]
    prom.serve(broken_at(kind, reply))
    got, out, err, _ = run_cli(COMMANDS[command](prom.url))
    line = one_line(err)
    assert (got, out) == (2, ""), line
    assert says in line, line


def test_a_redirect_with_a_huge_body_is_followed_without_reading_it(
    prom: fake.FakePrometheus,
) -> None:
    """urllib reads a redirect's body whole before following it; the cap holds there too."""

    def respond(path: str, params: dict[str, str]) -> fake.Reply:
        if path.startswith("/old"):
            return fake.Reply(
                b" " * (1 << 20),
                status=b"HTTP/1.1 302 Found",
                headers=(f"Location: {prom.url}{path[4:]}?{urlencode(params)}".encode(),),
                length=150 << 20,
                hold_s=8,
            )
        return fake.fleet_reply(path, params)

    prom.serve(respond)
    code, out, err, elapsed = run_cli(COMMANDS["snapshot-json"](prom.url + "/old"))
    assert (code, err) == (0, "")
    assert len(json.loads(out)["hosts"]) == 2
    assert elapsed < DEFAULT_TIMEOUT_S


def special_fleet() -> list[fake.Gpu]:
    """GPU i of node-x has an unusable FB_FREE and GPU_UTIL; node-y's newest sample time is absurd."""
    specials = ["+Inf", "-Inf", "NaN", "1e999", "1e300", "-5"]
    gpus = []
    for i, value in enumerate(specials):
        values = {
            **fake.DEFAULT_VALUES,
            "DCGM_FI_DEV_FB_FREE": value,
            "DCGM_FI_DEV_GPU_UTIL": value,
        }
        gpus.append(fake.Gpu("node-x", i, values=values))
    return gpus


def special_reply(path: str, params: dict[str, str]) -> fake.Reply:
    kind = fake.kind_of(path, params)
    gpus = special_fleet()
    if kind == "fresh":
        payload = fake.fleet_answer(kind, gpus)
        payload["data"]["result"][0]["value"][1] = "1e300"  # a "timestamp" in the year 10**292
        return fake.json_reply(payload)
    return fake.json_reply(fake.fleet_answer(kind, gpus))


def test_inf_nan_and_absurd_values_are_na_in_the_json(prom: fake.FakePrometheus) -> None:
    prom.serve(special_reply)
    code, out, err, _ = run_cli(COMMANDS["snapshot-json"](prom.url))
    assert (code, err) == (0, "")
    (host,) = json.loads(out)["hosts"]
    samples = [d["sample"] for d in host["devices"]]
    assert [s["memory_free"] for s in samples] == [None] * 6
    assert [s["utilization_gpu"] for s in samples] == [None] * 6
    assert [s["memory_used"] for s in samples] == [20480 << 20] * 6  # the rest is read as usual
    assert host["util_mean"] is None and host["util_max"] is None
    assert host["age_s"] is not None and 0 <= host["age_s"] < 60  # GPU 0's absurd time left out


def test_inf_nan_and_absurd_values_are_na_in_the_table(prom: fake.FakePrometheus) -> None:
    prom.serve(special_reply)
    code, out, err, _ = run_cli(COMMANDS["snapshot"](prom.url))
    assert (code, err) == (0, "")
    rows = [
        line.split() for line in out.splitlines() if line.startswith("node-x ") and "NVIDIA" in line
    ]
    assert len(rows) == 6
    for row in rows:  # HOST GPU NAME(4 words) UTIL MEM FREE TEMP POWER
        assert row[6] == "N/A" and row[8] == "N/A", row
    assert "inf" not in out.lower() and "nan" not in out.lower()


def test_fit_leaves_out_gpus_whose_free_memory_is_not_a_number(prom: fake.FakePrometheus) -> None:
    prom.serve(special_reply)
    code, out, err, _ = run_cli(COMMANDS["fit"](prom.url))
    assert code == 1 and "Traceback" not in err
    assert "no GPU reports its free memory" in out


def test_range_query_shapes_are_checked(prom: fake.FakePrometheus) -> None:
    """The sparklines' range query: a matrix with [time, "value"] points, else one line."""
    from gputui.sources.prometheus.api import PrometheusBadResponse

    client = PrometheusClient(prom.url, timeout=2.0)
    matrix = {
        "status": "success",
        "data": {
            "resultType": "matrix",
            "result": [{"metric": {"gpu": "0"}, "values": [[1, "2"], [2, "+Inf"], [3, "1e999"]]}],
        },
    }
    prom.serve(everywhere(fake.json_reply(matrix)))
    (series,) = client.query_range("up", 0, 10, 1)
    assert series.points[0] == (1.0, 2.0)
    assert all(v != v for _, v in series.points[1:])  # NaN: missing, never infinity
    matrix["data"]["result"][0]["values"] = [[1, "2", 3]]
    prom.serve(everywhere(fake.json_reply(matrix)))
    with pytest.raises(PrometheusBadResponse, match=r"\(query up\).*values\[0\] is not"):
        client.query_range("up", 0, 10, 1)


async def test_the_cluster_view_shows_a_broken_answer_in_its_banner_and_recovers(
    prom: fake.FakePrometheus,
) -> None:
    from gputui.tui.cluster_app import ClusterApp

    app = ClusterApp(PrometheusSource(prom.url, timeout=1.0), interval=0.5)
    async with app.run_test(size=(150, 45)) as pilot:

        async def error_with(text: str) -> str:
            for _ in range(int((1.0 + 2.0 + MARGIN_S) / 0.05)):  # deadline, back-off, margin
                if app.last_error and text in app.last_error:
                    return str(app.screen.query_one("#cluster-banner").content)
                await pilot.pause(0.05)
            raise AssertionError(f"no error with {text!r}; last: {app.last_error!r}")

        prom.serve(everywhere(fake.Reply(b'{"status": "success"}', drip_s=0.5)))
        banner = await error_with("no complete answer within 1 s")
        assert "Prometheus unreachable" in banner
        prom.serve(everywhere(vector_of({"metric": "gpu", "value": [1, "2"]})))
        banner = await error_with("metric is not an object")
        assert app.is_running
        prom.serve(lambda path, params: fake.fleet_reply(path, params))
        for _ in range(200):  # the retry comes after the back-off (1 s, then 2 s)
            if app.last_error is None and app.refreshes:
                break
            await pilot.pause(0.05)
        assert app.last_error is None
        assert app.screen.query_one("#cluster-banner").has_class("hidden")
