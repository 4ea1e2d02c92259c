"""The HTTP policy of every request to Prometheus: URLs, redirects, credentials, long queries
by POST, bounds on series, one deadline for a command and its queries run side by side.

Served by fake servers on 127.0.0.1 (tests/fuzz/prometheus_fake.py); the commands run in
process through gputui.cli.main.
"""

from __future__ import annotations

import gzip
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "fuzz"))
import prometheus_fake as fake  # noqa: E402

from gputui.sources.prometheus import answer as answers  # noqa: E402
from gputui.sources.prometheus import endpoint, shapes  # noqa: E402
from gputui.sources.prometheus.api import (  # noqa: E402
    CommandDeadline,
    PrometheusClient,
    PrometheusRequestError,
    PrometheusTooLarge,
    PrometheusUnreachable,
)
from gputui.sources.prometheus.source import PrometheusSource, run_all  # noqa: E402

from .test_prometheus_responses import one_line, run_cli  # noqa: E402


@pytest.fixture(scope="module")
def servers() -> Iterator[tuple[fake.FakePrometheus, fake.FakePrometheus]]:
    a, b = fake.FakePrometheus(), fake.FakePrometheus()
    yield a, b
    a.stop()
    b.stop()


@pytest.fixture
def pair(
    servers: tuple[fake.FakePrometheus, fake.FakePrometheus],
) -> Iterator[tuple[fake.FakePrometheus, fake.FakePrometheus]]:
    yield servers
    for srv in servers:
        srv.serve(lambda path, params: fake.fleet_reply(path, params))


def _with_auth(url: str) -> str:
    return url.replace("http://", "http://viewer:s3cret@")


def redirect(to: str, code: int = 302) -> fake.Reply:
    return fake.Reply(
        b"", status=b"HTTP/1.1 %d Moved" % code, headers=(b"Location: " + to.encode(),)
    )


# --- URLs --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "url", ["http://[::1", "http://a[b:9090", "http://[nothost]:9090", "http://h\u202e:9090", " "]
)
def test_a_url_that_is_not_one_is_one_line(url: str) -> None:
    code, out, err, _ = run_cli(["snapshot", "--prometheus", url])
    line = one_line(err)
    assert (code, out) == (2, "") and "--prometheus" in line, line


@pytest.mark.parametrize(
    ("url", "base", "origin"),
    [
        ("http://[::1]:9090/", "http://[::1]:9090", "http://[::1]:9090"),
        (
            "HTTP://Prom.Example.:9090/p/",
            "http://prom.example.:9090/p",
            "http://prom.example.:9090",
        ),
        ("https://viewer:p%40ss@prom:443", "https://prom:443", "https://prom:443"),
        (
            "https://bücher.example",
            "https://xn--bcher-kva.example",
            "https://xn--bcher-kva.example:443",
        ),
    ],
)
def test_a_good_url_is_parsed_once_into_its_origin(url: str, base: str, origin: str) -> None:
    parsed = endpoint.parse(url)
    assert (parsed.base, parsed.origin_text()) == (base, origin)


@pytest.mark.parametrize(
    ("location", "same"),
    [("/x?q=1", True), ("http://h:80/y", True), ("http://H/z", True), ("https://h/", False),
     ("http://h:81/", False), ("//other/", False), ("http://h.evil/", False)],
)  # fmt: skip
def test_a_redirect_keeps_its_origin_or_is_another(location: str, same: bool) -> None:
    here = endpoint.parse("http://h")
    origin, _ = endpoint.redirect("http://h/api/v1/query?query=up", location)
    assert (origin == here.origin) is same


def test_an_empty_url_is_refused_not_taken_for_no_url() -> None:
    code, out, err, _ = run_cli(["snapshot", "--prometheus", "", "--json"])
    line = one_line(err)
    assert (code, out) == (2, "") and "--prometheus '': empty" in line, line


def test_an_empty_url_is_refused_by_fit_too() -> None:
    models = str(Path(__file__).resolve().parents[2] / "fuzz" / "prometheus_models.toml")
    code, out, err, _ = run_cli(["fit", models, "--prometheus", ""])
    assert (code, out) == (2, "") and "--prometheus '': empty" in one_line(err)


# --- redirects and credentials ------------------------------------------------------------


def test_credentials_never_follow_a_redirect_to_another_origin(
    pair: tuple[fake.FakePrometheus, fake.FakePrometheus],
) -> None:
    a, b = pair
    a.serve(lambda path, params: redirect(f"{b.url}{path}?{_query(params)}"))
    code, out, err, _ = run_cli(["snapshot", "--prometheus", _with_auth(a.url)])
    line = one_line(err)
    assert b.seen == [], "a request went to the other origin"
    assert (code, out) == (2, ""), line
    assert a.url.replace("http://", "") in line and b.url.replace("http://", "") in line, line
    assert "another origin" in line and "s3cret" not in line


def _query(params: dict[str, str]) -> str:
    from urllib.parse import urlencode

    return urlencode(params)


def test_a_same_origin_redirect_is_followed_with_the_credentials(
    pair: tuple[fake.FakePrometheus, fake.FakePrometheus],
) -> None:
    a, _ = pair

    def respond(path: str, params: dict[str, str]) -> fake.Reply:
        if not path.startswith("/moved"):
            return redirect(f"/moved{path}?{_query(params)}", 307)
        return fake.fleet_reply(path.removeprefix("/moved"), params)

    a.serve(respond)
    code, out, err, _ = run_cli(["snapshot", "--prometheus", _with_auth(a.url), "--json"])
    assert (code, err) == (0, ""), err
    assert len(json.loads(out)["hosts"]) == 2
    followed = [s for s in a.seen if s.path.startswith("/moved")]
    assert followed and all(s.authorization == "Basic dmlld2VyOnMzY3JldA==" for s in followed)


@pytest.mark.parametrize(
    ("location", "says"),
    [("/api/v1/query", "redirect loop"), ("/next", "over 5 redirects"), ("http://[::1", "bad URL")],
)
def test_redirect_loops_chains_and_bad_locations_are_one_line(
    pair: tuple[fake.FakePrometheus, fake.FakePrometheus], location: str, says: str
) -> None:
    a, _ = pair
    hops = iter(range(100))

    def respond(path: str, params: dict[str, str]) -> fake.Reply:
        return redirect(f"{location}{next(hops)}" if location == "/next" else location)

    a.serve(respond)
    code, out, err, _ = run_cli(["snapshot", "--prometheus", a.url])
    line = one_line(err)
    assert (code, out) == (2, "") and says in line, line


def test_a_compressed_body_is_refused_not_inflated(
    pair: tuple[fake.FakePrometheus, fake.FakePrometheus],
) -> None:
    a, _ = pair
    bomb = gzip.compress(b" " * (200 << 20))  # 200 MiB of spaces in about 200 KiB
    a.serve(lambda p, q: fake.Reply(bomb, headers=(b"Content-Encoding: gzip",)))
    code, out, err, _ = run_cli(["snapshot", "--prometheus", a.url])
    line = one_line(err)
    assert (code, out) == (2, "") and "Content-Encoding 'gzip'" in line, line


@pytest.mark.parametrize("lengths", [(b"-5",), (b"12, 13",), (b"0x20",), (b"%d", b"%d+7")], ids=str)
def test_a_content_length_that_is_not_one_number_is_refused(
    pair: tuple[fake.FakePrometheus, fake.FakePrometheus], lengths: tuple[bytes, ...]
) -> None:
    a, _ = pair

    def respond(path: str, params: dict[str, str]) -> fake.Reply:
        body = fake.fleet_reply(path, params).body
        heads = tuple(
            b"Content-Length: " + (b"%d" % (len(body) + 7) if v == b"%d+7" else
                                   b"%d" % len(body) if v == b"%d" else v)
            for v in lengths
        )  # fmt: skip
        return fake.Reply(body, length=None, headers=heads)

    a.serve(respond)
    code, out, err, _ = run_cli(["snapshot", "--prometheus", a.url])
    line = one_line(err)
    assert (code, out) == (2, "") and "Content-Length that is not one number" in line, line


# --- long queries -------------------------------------------------------------------------


def test_a_long_query_goes_by_post_a_short_one_by_get(
    pair: tuple[fake.FakePrometheus, fake.FakePrometheus],
) -> None:
    a, _ = pair
    client = PrometheusClient(a.url)
    long_expr = "up or " + " or ".join(f'up{{instance="host-{i:05d}"}}' for i in range(2000))
    client.query("up")
    client.query(long_expr)
    assert [(s.method, s.params["query"]) for s in a.seen] == [("GET", "up"), ("POST", long_expr)]
    assert all(s.target_length < 4096 for s in a.seen)


# --- bounds on series ---------------------------------------------------------------------


def _series(n: int) -> bytes:
    item = {"metric": {"Hostname": "h", "gpu": "0"}, "value": [1.0, "1"]}
    data = {"resultType": "vector", "result": [item] * n}
    return json.dumps({"status": "success", "data": data}).encode()


def test_series_past_the_bound_are_never_decoded() -> None:
    made = 0

    def item(value: Any, where: str) -> Any:
        nonlocal made
        made += 1
        return shapes.vector_item(value, where)

    with pytest.raises(answers.TooManySeries):
        answers.read(_series(100_000), item, "vector", 1000)
    assert made == 1000


def test_an_answer_over_the_bound_names_it_and_match(
    pair: tuple[fake.FakePrometheus, fake.FakePrometheus],
) -> None:
    a, _ = pair
    a.serve(lambda p, q: fake.Reply(_series(301)))
    client = PrometheusClient(a.url, max_series=300)
    with pytest.raises(PrometheusTooLarge) as caught:
        client.query("up")
    assert "over 300 series in one answer" in caught.value.reason
    assert "--match" in caught.value.reason


def test_a_command_over_the_bound_names_it_and_match(
    pair: tuple[fake.FakePrometheus, fake.FakePrometheus],
) -> None:
    a, _ = pair
    a.serve(lambda p, q: fake.Reply(_series(100)))
    client = PrometheusClient(a.url, max_series=300, max_series_total=250)
    client.query("up")
    client.query("up")
    with pytest.raises(PrometheusTooLarge) as caught:
        client.query("up")
    assert "over 250 series in one command" in caught.value.reason
    assert "--match" in caught.value.reason
    client.reset_series()  # a view's next refresh
    assert len(client.query("up")) == 100


def test_the_command_bound_holds_for_answers_read_side_by_side(
    pair: tuple[fake.FakePrometheus, fake.FakePrometheus],
) -> None:
    a, _ = pair
    a.serve(lambda p, q: fake.Reply(_series(100), delay_s=0.3))  # both asked before either ends
    client = PrometheusClient(a.url, max_series=300, max_series_total=150)
    with pytest.raises(PrometheusTooLarge, match="over 150 series in one command"):
        run_all([lambda: client.query("up"), lambda: client.query("up")])
    assert a.most_in_flight == 2


def test_the_bound_is_one_line_from_the_command(
    pair: tuple[fake.FakePrometheus, fake.FakePrometheus], monkeypatch: pytest.MonkeyPatch
) -> None:
    from gputui.sources.prometheus import api

    a, _ = pair
    a.serve(lambda p, q: fake.Reply(_series(50)) if fake.kind_of(p, q) == "up" else
            fake.fleet_reply(p, q))  # fmt: skip
    monkeypatch.setattr(api, "MAX_SERIES_PER_ANSWER", 40)
    code, out, err, _ = run_cli(["snapshot", "--prometheus", a.url])
    line = one_line(err)
    assert (code, out) == (2, "") and "over 40 series" in line and "--match" in line, line


# --- one deadline, queries side by side ---------------------------------------------------


def test_the_command_deadline_is_checked_before_each_query() -> None:
    now = [0.0]
    deadline = CommandDeadline(10.0, clock=lambda: now[0])
    client = PrometheusClient("http://127.0.0.1:9", deadline=deadline)
    now[0] = 10.5
    with pytest.raises(PrometheusUnreachable, match=r"deadline of 10 s passed \(--deadline"):
        client.query("up")
    assert client.requests == 0


def test_a_slow_server_meets_the_command_deadline_not_one_per_query(
    pair: tuple[fake.FakePrometheus, fake.FakePrometheus],
) -> None:
    a, _ = pair
    a.serve(lambda p, q: fake.Reply(fake.fleet_reply(p, q).body, delay_s=1.5))
    code, out, err, _ = run_cli(["snapshot", "--prometheus", a.url, "--deadline", "2"], limit=10)
    line = one_line(err)
    assert (code, out) == (1, "") and "deadline of 2 s passed" in line, line


@pytest.mark.parametrize("bad", ["0", "-1", "nan", "inf", "1e400", "abc", "99999"])
def test_a_bad_deadline_is_one_line(bad: str) -> None:
    code, out, err, _ = run_cli(
        ["snapshot", "--prometheus", "http://127.0.0.1:9", "--deadline", bad]
    )
    assert (code, out) == (2, "") and "--deadline" in one_line(err)


def test_a_deadline_without_prometheus_is_refused() -> None:
    code, out, err, _ = run_cli(["snapshot", "--deadline", "5"])
    assert (code, out) == (2, "") and "--deadline: only with --prometheus" in one_line(err)


def test_a_refresh_runs_its_queries_side_by_side(
    pair: tuple[fake.FakePrometheus, fake.FakePrometheus],
) -> None:
    a, _ = pair
    a.serve(lambda p, q: fake.Reply(fake.fleet_reply(p, q).body, delay_s=0.3))
    PrometheusSource(a.url).poll_cluster()
    assert a.most_in_flight > 1


def test_a_refused_query_is_one_line(pair: tuple[fake.FakePrometheus, fake.FakePrometheus]) -> None:
    a, _ = pair
    a.serve(lambda p, q: fake.json_reply({"status": "error", "error": "parse error"},
                                         status=b"HTTP/1.1 400 Bad Request"))  # fmt: skip
    with pytest.raises(PrometheusRequestError, match="bad query 'up': parse error"):
        PrometheusClient(a.url).query("up")
