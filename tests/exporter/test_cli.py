"""`gputui exporter` as a user runs it: bad arguments, the non-loopback warning, TLS + basic auth."""

from __future__ import annotations

import base64
import shutil
import ssl
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from gputui.exporter.server import parse_listen


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gputui", "exporter", *args],
        capture_output=True,
        text=True,
        timeout=30,
    )


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--listen", "nowhere"], "--listen 'nowhere': expected HOST:PORT"),
        (["--listen", "127.0.0.1:99999"], "expected HOST:PORT"),
        (["--interval", "0"], "--interval: 0 s is out of range"),
        (["--tls-cert", "x.pem"], "--tls-cert and --tls-key go together"),
        (["--basic-auth-file", "users"], "needs --tls-cert and --tls-key"),
        (["--scenario", "missing.toml"], "--scenario: missing.toml: no such file"),
        (["--models", "missing.toml"], "missing.toml: no such models file"),
    ],
)
def test_bad_arguments_are_one_line_and_exit_2(args: list[str], needle: str) -> None:
    result = run_cli("--source", "demo", *args)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0], result.stderr
    assert "Traceback" not in result.stderr


def test_default_listen_is_loopback() -> None:
    from gputui.cli import build_parser

    args = build_parser().parse_args(["exporter"])
    assert parse_listen(args.listen) == ("127.0.0.1", 9835)


def test_all_interfaces_only_when_asked_and_with_a_warning(
    start_exporter: type, scenario: Path
) -> None:
    exp = start_exporter(["--source", "demo", "--scenario", str(scenario), "--listen", "0.0.0.0:0"])
    warnings = [line for line in exp.lines if "warning" in line]
    assert len(warnings) == 1 and "0.0.0.0" in warnings[0] and "no TLS" in warnings[0]


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")
def test_tls_and_basic_auth(start_exporter: type, scenario: Path, tmp_path: Path) -> None:
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
         "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    users = tmp_path / "users"
    users.write_text("prometheus:s3cret\n")
    users.chmod(0o644)
    loose = run_cli("--source", "demo", "--tls-cert", str(cert), "--tls-key", str(key),
                    "--basic-auth-file", str(users))  # fmt: skip
    assert loose.returncode == 2 and "chmod 600" in loose.stderr
    users.chmod(0o600)
    exp = start_exporter(
        ["--source", "demo", "--scenario", str(scenario), "--listen", "127.0.0.1:0",
         "--tls-cert", str(cert), "--tls-key", str(key), "--basic-auth-file", str(users)]
    )  # fmt: skip
    assert exp.url.startswith("https://127.0.0.1:")
    ctx = ssl.create_default_context(cafile=str(cert))

    def get(auth: str | None) -> int:
        req = urllib.request.Request(exp.url)
        if auth is not None:
            req.add_header("Authorization", "Basic " + base64.b64encode(auth.encode()).decode())
        try:
            with urllib.request.urlopen(req, context=ctx, timeout=10) as resp:
                return int(resp.status)
        except urllib.error.HTTPError as exc:
            return exc.code

    assert get(None) == 401
    assert get("prometheus:wrong") == 401
    assert get("nobody:s3cret") == 401
    assert get("prometheus:s3cret") == 200
    with pytest.raises(OSError):  # plain HTTP to the TLS port gets nowhere...
        urllib.request.urlopen(exp.url.replace("https", "http"), timeout=5).read()
    assert get("prometheus:s3cret") == 200  # ...and does not take the endpoint down
