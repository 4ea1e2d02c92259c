"""The reader's input checks and retry policy, without a server."""

from __future__ import annotations

import subprocess
import sys

import pytest

from gputui.sources.prometheus.api import (
    PrometheusClient,
    PrometheusRequestError,
    PrometheusUnreachable,
    check_url,
    parse_duration,
)
from gputui.sources.prometheus.source import Backoff, PrometheusSource, parse_selector


@pytest.mark.parametrize(
    ("given", "inner"),
    [
        (None, ""),
        ('{cluster="a"}', 'cluster="a"'),
        ('Hostname=~"gpu-.*", job!="x"', 'Hostname=~"gpu-.*", job!="x"'),
    ],
)
def test_selector_shapes(given: str | None, inner: str) -> None:
    assert parse_selector(given) == inner


@pytest.mark.parametrize("bad", ['up{job="x"}', "{job", "justaname"])
def test_bad_selectors_say_what_is_expected(bad: str) -> None:
    with pytest.raises(PrometheusRequestError, match="--match"):
        parse_selector(bad)


@pytest.mark.parametrize("bad", ["prometheus:9090", "ftp://host", "http://", "http://h:99999", "http://h/?q=1"])
def test_bad_urls(bad: str) -> None:
    with pytest.raises(PrometheusRequestError, match="--prometheus"):
        check_url(bad)


def test_credentials_in_the_url_become_a_header_not_part_of_the_address() -> None:
    client = PrometheusClient("https://viewer:p%40ss@prom.example:9090/")
    assert client.url == "https://prom.example:9090"


def test_queries_carry_the_selector_on_every_metric() -> None:
    source = PrometheusSource("http://127.0.0.1:9", match='{cluster="a"}')
    assert source.labelled_query().endswith(', cluster="a"}')
    assert source.metric_query("DCGM_FI_DEV_GPU_UTIL") == (
        'max by (Hostname, hostname, instance, gpu) ({__name__="DCGM_FI_DEV_GPU_UTIL", cluster="a"})'
    )
    assert 'timestamp({__name__="DCGM_FI_DEV_FB_USED", cluster="a"}) or ' in source.freshness_query()


def test_only_gpu_field_metrics_can_be_asked_for() -> None:
    with pytest.raises(ValueError, match="not a GPU field metric"):
        PrometheusSource("http://127.0.0.1:9", metrics=["up"])


def test_unreachable_is_a_retryable_error_with_the_reason() -> None:
    source = PrometheusSource("http://127.0.0.1:9", timeout=1)  # discard port: nothing listens
    with pytest.raises(PrometheusUnreachable, match="cannot reach http://127.0.0.1:9"):
        source.poll_cluster()


@pytest.mark.parametrize(("text", "seconds"), [("15s", 15.0), ("1m30s", 90.0), ("500ms", 0.5), ("x", None), ("", None)])
def test_durations(text: str, seconds: float | None) -> None:
    assert parse_duration(text) == seconds


def test_backoff_doubles_to_a_cap_and_resets() -> None:
    b = Backoff(2.0, cap=10.0)
    assert b.delay() == 2.0
    assert [b.failure() for _ in range(4)] == [4.0, 8.0, 10.0, 10.0]
    b.success()
    assert b.delay() == 2.0


def _gputui(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gputui", *args], capture_output=True, text=True, timeout=60
    )


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["snapshot", "--match", 'job="gpu"'], "--match: only with --prometheus URL"),
        (["snapshot", "--prometheus", "http://127.0.0.1:9", "--demo"], "--demo: not with --prometheus"),
        (["--prometheus", "http://127.0.0.1:9", "--source", "nvml"], "--source: not with --prometheus"),
        (["--match", 'job="gpu"'], "--match: only with --prometheus URL"),
        (["fit", "--match", 'job="gpu"'], "--match: only with --prometheus URL"),
        (["fit", "--prometheus", "http://x:9090", "--gpu", "RTX 3090"], "not allowed with argument"),
        (["snapshot", "--prometheus", "prometheus:9090"], "expected an http:// or https:// URL"),
    ],
)
def test_cluster_arguments_are_checked(args: list[str], needle: str) -> None:
    result = _gputui(*args)
    assert result.returncode == 2, result.stderr
    assert needle in result.stderr and "Traceback" not in result.stderr
